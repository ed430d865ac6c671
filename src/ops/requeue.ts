import type { LedgerRepository } from '../ledger/repository.ts';
import type { LedgerKey, LedgerRow } from '../ledger/types.ts';
import type { DeliveryHistory } from '../ledger/history.ts';
import { enqueueDeliveries, type DeliverQueues } from '../../queues/deliver-queue.ts';

export interface RequeueResult {
  requeued: LedgerKey[];
  skipped: Array<{ key: LedgerKey; reason: string }>;
}

/**
 * Puts failed events back: ledger failed → pending, then a fresh job. The old job (same deterministic id) may still
 * sit in the failed set, where it would swallow the new add, so it is removed first. Rows without a payload
 * (malformed at ingest) cannot be sent and are skipped with a reason.
 */
export async function requeueFailed(
  ledger: LedgerRepository,
  queues: DeliverQueues,
  rows: readonly LedgerRow[],
  maxRetryFor: (source: string) => number,
  story?: { history: Pick<DeliveryHistory, 'append'>; actor: string },
  nowMs = Date.now(),
): Promise<RequeueResult> {
  const skipped: RequeueResult['skipped'] = [];
  const candidates: LedgerRow[] = [];
  for (const row of rows) {
    if (row.status !== 'failed') skipped.push({ key: row, reason: `status is ${row.status}, not failed` });
    else if (row.payload === null) skipped.push({ key: row, reason: 'malformed at ingest (no payload to send); fix the source event instead' });
    else candidates.push(row);
  }
  const moved = await ledger.requeueFailed(candidates, nowMs);
  if (story) await Promise.all(moved.map((key) => story.history.append({ key, atMs: nowMs, event: 'requeued', actor: story.actor })));
  for (const row of moved) {
    const existing = await queues.getJob(row);
    if (existing && ((await existing.isFailed()) || (await existing.isCompleted()))) await existing.remove();
  }
  await enqueueDeliveries(
    queues,
    moved.map((row) => ({ key: row, eventType: row.eventType, noticeKind: row.noticeKind, userId: row.userId, maxRetryCount: maxRetryFor(row.sourceName) })),
  );
  return { requeued: moved, skipped };
}
