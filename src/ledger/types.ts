import type { DeliveryStatus } from './status.ts';
export { DELIVERY_STATUSES, type DeliveryStatus } from './status.ts';

/** The first channel, named here because ledger rows from before the multi-channel core all carry it. */
export const CHANNEL_TENCENT_IM_C2C = 'tencent_im_c2c';
export const CHANNEL_INBOX = 'inbox';
export const CHANNEL_TENCENT_PUSH = 'tencent_push';

/** The ledger's primary key: one delivery of one source event over one channel. */
export interface LedgerKey {
  sourceName: string;
  appCode: string;
  sourceEventId: string;
  channel: string;
}

/** What ingest records for a source event: pending with a payload, or failed with the reason it is malformed. */
export interface NewLedgerRow extends LedgerKey {
  eventType: string;
  userId: string;
  noticeKind: string;
  status: 'pending' | 'failed' | 'revoked';
  payload: string | null;
  lastErrorCode: string | null;
  lastError: string | null;
  sourceRowId: number | null;
  sourceCreatedAtMs: number | null;
  /** Set for notices a newer version makes obsolete (see Supersede); absent otherwise. */
  supersede?: Supersede | null;
  /** The batch job carrying the row's first attempt with others of its ingest batch; absent for a job of its own. */
  batchJobId?: string | null;
}

/**
 * What a notice is about and its version there: a newer version of the same scope makes an older notice obsolete
 * (a balance after 20 changes needs only its latest). `scope` is hashed into supersede_key; `version` is int64 text.
 */
export interface Supersede {
  scope: string;
  version: string;
}

export interface LedgerRow extends LedgerKey {
  eventType: string;
  userId: string;
  noticeKind: string;
  status: DeliveryStatus;
  attemptCount: number;
  claimCount: number;
  lockedBy: string | null;
  lockUntilMs: number | null;
  nextRetryAtMs: number | null;
  lastErrorCode: string | null;
  lastError: string | null;
  payload: string | null;
  providerRef: string | null;
  sourceRowId: number | null;
  sourceCreatedAtMs: number | null;
  createdAtMs: number;
  updatedAtMs: number;
  deliveredAtMs: number | null;
  /** int64 text; null for notices that cannot be superseded. */
  supersedeVersion: string | null;
  /** SHA-256 of the supersede scope; null for notices that cannot be superseded. */
  supersedeKey: Buffer | null;
  /** The source_event_id of the newer notice that made this one obsolete. */
  supersededBy: string | null;
  /** The batch job that carried (or carries) the row's first attempt; null when it had a job of its own. */
  batchJobId?: string | null;
}

export function formatKey(key: LedgerKey): string {
  return `${key.sourceName}/${key.appCode}/${key.sourceEventId}/${key.channel}`;
}
