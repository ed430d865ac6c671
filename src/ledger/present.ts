import type { LedgerRow } from './types.ts';

/** What operators see of a ledger row (snake_case, like the table). */
export function presentRow(row: LedgerRow) {
  return {
    source_name: row.sourceName, app_code: row.appCode, source_event_id: row.sourceEventId, channel: row.channel,
    event_type: row.eventType, user_id: row.userId, notice_kind: row.noticeKind, status: row.status,
    attempt_count: row.attemptCount, claim_count: row.claimCount, locked_by: row.lockedBy, lock_until_ms: row.lockUntilMs,
    next_retry_at_ms: row.nextRetryAtMs, last_error_code: row.lastErrorCode, last_error: row.lastError, im_msg_key: row.imMsgKey,
    source_row_id: row.sourceRowId, source_created_at_ms: row.sourceCreatedAtMs, created_at_ms: row.createdAtMs,
    updated_at_ms: row.updatedAtMs, delivered_at_ms: row.deliveredAtMs, supersede_version: row.supersedeVersion,
    superseded_by: row.supersededBy, payload: row.payload,
  };
}
