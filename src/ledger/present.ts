import { formatKey, type LedgerRow } from './types.ts';
import type { DeliveryHistory } from './history.ts';
import { STATUS_TABLE } from './status.ts';
import { errorLinkAnchor } from './error-guide.ts';

/**
 * What operators see of a ledger row in lists and searches (snake_case, like the table): never the payload, which
 * holds what the user was told; only its size. The payload is shown on request for one event (payloadOf).
 */
export function presentRow(row: LedgerRow) {
  return {
    source_name: row.sourceName,
    app_code: row.appCode,
    source_event_id: row.sourceEventId,
    channel: row.channel,
    event_type: row.eventType,
    user_id: row.userId,
    notice_kind: row.noticeKind,
    status: row.status,
    status_meaning: STATUS_TABLE[row.status].meaning,
    attempt_count: row.attemptCount,
    claim_count: row.claimCount,
    locked_by: row.lockedBy,
    lock_until_ms: row.lockUntilMs,
    next_retry_at_ms: row.nextRetryAtMs,
    last_error_code: row.lastErrorCode,
    last_error: row.lastError,
    error_anchor: row.lastErrorCode ? errorLinkAnchor(row.lastErrorCode) : null,
    provider_ref: row.providerRef,
    source_row_id: row.sourceRowId,
    source_created_at_ms: row.sourceCreatedAtMs,
    created_at_ms: row.createdAtMs,
    updated_at_ms: row.updatedAtMs,
    delivered_at_ms: row.deliveredAtMs,
    supersede_version: row.supersedeVersion,
    superseded_by: row.supersededBy,
    payload_bytes: row.payload === null ? null : Buffer.byteLength(row.payload),
  };
}

/**
 * Rows as operators see them, each with its timeline: recorded, then every step the history kept (attempts that did
 * not deliver, a delivery after retries, superseded, requeued by whom), then where it stands now.
 */
export async function withTimelines(history: Pick<DeliveryHistory, 'forEvents'>, rows: readonly LedgerRow[]) {
  const steps = await history.forEvents([...new Set(rows.map((r) => r.sourceEventId))]);
  return rows.map((row) => {
    const own = steps.filter((s) => formatKey(s.key) === formatKey(row));
    const timeline = [
      { at_ms: row.createdAtMs, event: 'recorded', actor: 'ingest' },
      ...own.map((s) => ({ at_ms: s.atMs, event: s.event, actor: s.actor, error_code: s.errorCode, error: s.errorMessage, latency_ms: s.latencyMs })),
      ...(row.status === 'delivering' ? [{ at_ms: row.updatedAtMs, event: 'claimed', actor: row.lockedBy }] : []),
      ...(row.status === 'delivered' && !own.some((s) => s.event === 'delivered' && s.atMs >= (row.deliveredAtMs ?? 0) - 1000)
        ? [{ at_ms: row.deliveredAtMs ?? row.updatedAtMs, event: 'delivered', actor: '' }]
        : []),
    ];
    return { ...presentRow(row), timeline };
  });
}
