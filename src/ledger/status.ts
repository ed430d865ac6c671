/**
 * Every status a ledger row can have, once: what it means to an operator, whether delivery is over, which retention
 * purges it, whether a row in it stands for a newer version of a notice, and where the dashboard shows it. Every
 * list of statuses (transitions, purge, tiles, supersede checks, inspect) derives from this table.
 */
export const STATUS_TABLE = {
  pending: { meaning: 'waiting for its first send', final: false, retention: null, carriesNewerVersion: true, alarming: false },
  delivering: { meaning: 'claimed by a deliver worker; sending', final: false, retention: null, carriesNewerVersion: true, alarming: false },
  delivered: { meaning: 'the provider took it', final: true, retention: 'delivered', carriesNewerVersion: true, alarming: false },
  delivered_unconfirmed: {
    meaning: 'sent, answer lost; not resent, as a resend could show twice (push)',
    final: true,
    retention: 'failed',
    carriesNewerVersion: false,
    alarming: false,
  },
  retryable: { meaning: 'a send failed for now; retried at next_retry_at', final: false, retention: null, carriesNewerVersion: true, alarming: false },
  deferred: {
    meaning: "waiting for its moment (the user's quiet hours): sent when next_retry_at comes",
    final: false,
    retention: null,
    carriesNewerVersion: true,
    alarming: false,
  },
  failed: {
    meaning: 'given up (permanent error or retries spent); an operator may requeue it',
    final: true,
    retention: 'failed',
    carriesNewerVersion: false,
    alarming: true,
  },
  superseded: {
    meaning: 'not sent: a newer version of the same notice was sent or is on its way',
    final: true,
    retention: 'delivered',
    carriesNewerVersion: false,
    alarming: false,
  },
  suppressed: {
    meaning: 'not sent: the user turned this kind off on this channel (preference), or over the push cap (frequency_cap)',
    final: true,
    retention: 'delivered',
    carriesNewerVersion: false,
    alarming: false,
  },
  digested: {
    meaning: "not pushed on its own: counted in a digest; its window's leader sent one summary",
    final: true,
    retention: 'delivered',
    carriesNewerVersion: false,
    alarming: false,
  },
  skipped_read: {
    meaning: 'not pushed: its inbox item was read, archived or deleted within escalate_after',
    final: true,
    retention: 'delivered',
    carriesNewerVersion: false,
    alarming: false,
  },
  revoking: {
    meaning: 'being taken back: the provider is asked to withdraw what it was sent (a revocation)',
    final: true,
    retention: null,
    carriesNewerVersion: false,
    alarming: false,
  },
  revoked: {
    meaning: 'taken back (NoticeRevoked or notice-service revoke): never sent, or withdrawn after it was sent',
    final: true,
    retention: 'delivered',
    carriesNewerVersion: false,
    alarming: false,
  },
  expired: {
    meaning: "not sent: older than its kind's deliver.expire_after when its turn came",
    final: true,
    retention: 'delivered',
    carriesNewerVersion: false,
    alarming: false,
  },
} as const satisfies Record<
  string,
  { meaning: string; final: boolean; retention: 'delivered' | 'failed' | null; carriesNewerVersion: boolean; alarming: boolean }
>;

export type DeliveryStatus = keyof typeof STATUS_TABLE;

/** In table order: the order of the dashboard's tiles and of every list. */
export const DELIVERY_STATUSES = Object.keys(STATUS_TABLE) as DeliveryStatus[];

/** Final statuses a retention purges, with the retention key that keeps them (superseded goes with delivered). */
export const PURGEABLE_STATUSES = DELIVERY_STATUSES.flatMap((status) => {
  const retention = STATUS_TABLE[status].retention;
  return retention ? [{ status, retention }] : [];
});
export type PurgeableStatus = (typeof PURGEABLE_STATUSES)[number]['status'];

/** Statuses in which a row is a live version of its notice (sent or on its way): only those supersede an older one. */
export const NEWER_VERSION_STATUSES = DELIVERY_STATUSES.filter((s) => STATUS_TABLE[s].carriesNewerVersion);
