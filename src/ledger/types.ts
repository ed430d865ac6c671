export const DELIVERY_STATUSES = ['pending', 'delivering', 'delivered', 'retryable', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const CHANNEL_TENCENT_IM_C2C = 'tencent_im_c2c';

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
  status: 'pending' | 'failed';
  payload: string | null;
  lastErrorCode: string | null;
  lastError: string | null;
  sourceRowId: number | null;
  sourceCreatedAtMs: number | null;
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
  imMsgKey: string | null;
  sourceRowId: number | null;
  sourceCreatedAtMs: number | null;
  createdAtMs: number;
  updatedAtMs: number;
  deliveredAtMs: number | null;
}

export function formatKey(key: LedgerKey): string {
  return `${key.sourceName}/${key.appCode}/${key.sourceEventId}/${key.channel}`;
}
