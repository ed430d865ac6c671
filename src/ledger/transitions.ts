import { DELIVERY_STATUSES, STATUS_TABLE, type DeliveryStatus } from './status.ts';

/**
 * The allowed moves of a ledger row. Every conditional UPDATE in the repository takes its WHERE clause from here
 * (`transitionGuard`), so a stale or duplicate worker cannot move a row along an edge that is not here.
 *
 *   pending ──claim──▶ delivering ──▶ delivered
 *   retryable ─claim─▶ delivering ──▶ retryable (transient error / rate limited, lock released)
 *   deferred ──claim─▶ delivering ──▶ deferred (not its moment yet: quiet hours; lock released, no attempt spent)
 *   delivering (lock expired) ─claim─▶ delivering              └──▶ failed (permanent, or retries exhausted)
 *   pending / retryable / deferred / failed ──revocation──▶ revoked (never sent)
 *   delivered ──revocation──▶ revoking ──withdrawn──▶ revoked
 *   failed ──operator requeue──▶ pending           └──▶ superseded (a newer version was already in the ledger; no send)
 *                                                  └──▶ delivered_unconfirmed (may have arrived; not resent by policy)
 *                                                  └──▶ expired (older than its kind's expire_after; not sent)
 *                                                  └──▶ suppressed (the user's preference, or the push cap; not sent)
 *                                                  └──▶ skipped_read (escalate_after: the inbox item was read first)
 *                                                  └──▶ digested (counted in a digest summary its leader sends)
 */
export const TRANSITIONS: Readonly<Record<DeliveryStatus, readonly DeliveryStatus[]>> = {
  pending: ['delivering', 'revoked'],
  retryable: ['delivering', 'revoked'],
  deferred: ['delivering', 'revoked'],
  delivering: [
    'delivering',
    'delivered',
    'delivered_unconfirmed',
    'retryable',
    'deferred',
    'failed',
    'superseded',
    'suppressed',
    'skipped_read',
    'digested',
    'expired',
  ],
  delivered: ['revoking'],
  delivered_unconfirmed: [],
  failed: ['pending', 'revoked'],
  superseded: [],
  suppressed: [],
  skipped_read: [],
  digested: [],
  revoking: ['revoked'],
  revoked: [],
  expired: [],
};

export function canTransition(from: DeliveryStatus, to: DeliveryStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Statuses a row can move out of. */
export function sourcesOf(to: DeliveryStatus): DeliveryStatus[] {
  return DELIVERY_STATUSES.filter((from) => canTransition(from, to));
}

/** Statuses from which a worker may still send: anything that can be claimed. The rest is final for delivery. */
export const IN_FLIGHT_STATUSES: readonly DeliveryStatus[] = sourcesOf('delivering');

export function isFinalForDelivery(status: DeliveryStatus): boolean {
  return !IN_FLIGHT_STATUSES.includes(status);
}

// The status table and the edges must agree on what is final.
for (const status of DELIVERY_STATUSES) {
  if (STATUS_TABLE[status].final !== isFinalForDelivery(status)) throw new Error(`ledger status ${status}: STATUS_TABLE.final disagrees with TRANSITIONS`);
}

/**
 * Who may move a row that is `delivering`: `ours` — only the worker whose lock it carries (outcomes); `free_or_ours`
 * — also anyone once that lock has run out (a claim taking over from a dead worker). Rows in other statuses carry
 * no lock.
 */
export type LockRule = 'ours' | 'free_or_ours';

/**
 * What each ledger statement does, by the status it writes and the lock it needs; `from` narrows the statuses it
 * applies to below what TRANSITIONS allows into `to`.
 */
export const STATEMENTS = {
  claim: { to: 'delivering', lock: 'free_or_ours' },
  recordDelivered: { to: 'delivered', lock: 'ours' },
  recordRetryable: { to: 'retryable', lock: 'ours' },
  releaseRateLimited: { to: 'retryable', lock: 'ours' },
  recordDeferred: { to: 'deferred', lock: 'ours' },
  recordFailed: { to: 'failed', lock: 'ours' },
  recordUnconfirmed: { to: 'delivered_unconfirmed', lock: 'ours' },
  recordSuperseded: { to: 'superseded', lock: 'ours' },
  recordExpired: { to: 'expired', lock: 'ours' },
  recordSuppressed: { to: 'suppressed', lock: 'ours' },
  recordSkippedRead: { to: 'skipped_read', lock: 'ours' },
  recordDigested: { to: 'digested', lock: 'ours' },
  requeueFailed: { to: 'pending', lock: 'ours' },
  // A revocation: an unsent row ends revoked; a sent one is claimed for withdrawal, then recorded withdrawn.
  revokeUnsent: { to: 'revoked', from: ['pending', 'retryable', 'deferred', 'failed'], lock: 'ours' },
  startWithdrawal: { to: 'revoking', lock: 'ours' },
  recordWithdrawn: { to: 'revoked', from: ['revoking'], lock: 'ours' },
  // A channel notes, under its own lock, that a request which cannot be safely repeated is about to go out.
  markSending: { to: 'delivering', from: ['delivering'], lock: 'ours' },
} as const satisfies Record<string, { to: DeliveryStatus; from?: readonly DeliveryStatus[]; lock: LockRule }>;
export type LedgerStatement = keyof typeof STATEMENTS;

export type LockState = 'none' | 'ours' | 'others_live' | 'others_expired';

/** The pure decision the SQL below encodes: may `statement` change a row in `status` with this lock? */
export function mayApply(statement: LedgerStatement, status: DeliveryStatus, lock: LockState): boolean {
  const { lock: rule } = STATEMENTS[statement];
  if (!statementSources(statement).includes(status)) return false;
  if (status !== 'delivering') return true;
  return lock === 'ours' || (rule === 'free_or_ours' && (lock === 'others_expired' || lock === 'none'));
}

/**
 * The WHERE condition of a statement, derived from TRANSITIONS: `status` in the statement's source statuses, and for
 * `delivering` the lock rule. Status names are constants from this file, never input.
 */
export function transitionGuard(statement: LedgerStatement, workerId: string, nowMs: number): { sql: string; params: Array<string | number> } {
  const { lock } = STATEMENTS[statement];
  const sources = statementSources(statement);
  const parts: string[] = [];
  const params: Array<string | number> = [];
  const plain = sources.filter((s) => s !== 'delivering');
  if (plain.length > 0) parts.push(`status IN (${plain.map((s) => `'${s}'`).join(', ')})`);
  if (sources.includes('delivering')) {
    if (lock === 'ours') {
      parts.push(`(status = 'delivering' AND locked_by = ?)`);
      params.push(workerId);
    } else {
      parts.push(`(status = 'delivering' AND (lock_until_ms IS NULL OR lock_until_ms < ? OR locked_by = ?))`);
      params.push(nowMs, workerId);
    }
  }
  if (parts.length === 0) return { sql: 'FALSE', params };
  return { sql: `(${parts.join(' OR ')})`, params };
}

/** The statuses a statement may move a row out of: TRANSITIONS into its status, narrowed by its `from`. */
function statementSources(statement: LedgerStatement): DeliveryStatus[] {
  const spec: { to: DeliveryStatus; from?: readonly DeliveryStatus[] } = STATEMENTS[statement];
  return sourcesOf(spec.to).filter((s) => !spec.from || spec.from.includes(s));
}

/** `status IN (…)` for the in-flight statuses, for scans and clock updates that must leave final rows alone. */
export function inFlightSql(): string {
  return `status IN (${IN_FLIGHT_STATUSES.map((s) => `'${s}'`).join(', ')})`;
}
