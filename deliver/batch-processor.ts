import type { Job } from 'bullmq';
import type { LimitFunction } from 'p-limit';
import { addFollowUps, type DeliverBatchRow, type DeliverJobData } from '../queues/deliver-queue.ts';
import type { LedgerKey } from '../src/ledger/types.ts';
import { retryDelayMs } from '../src/delivery/retry-policy.ts';
import { deliverOnce, type DeliveryDecision } from '../src/delivery/deliver-once.ts';
import type { DeliverProcessorDeps } from './processor-deps.ts';

/** What a batch job's row needs next, beyond its first attempt: a job of its own. */
interface FollowUp {
  row: DeliverBatchRow;
  maxRetryCount: number;
  delayMs: number;
  deadLetter?: string;
}

/**
 * The batch-job path of the processor: `oneAtATime` is the processor's, so a row's batch copy and a job of its own
 * never run at once in this process.
 */
export function batchProcessor(
  deps: DeliverProcessorDeps,
  oneAtATime: (key: LedgerKey, attempt: () => Promise<DeliveryDecision>) => Promise<DeliveryDecision>,
): (job: Job<DeliverJobData>, rows: readonly DeliverBatchRow[]) => Promise<string> {
  return processBatch;

  /**
   * A batch job: each row's first attempt, as many at once as the channel's row limit allows; whatever a row needs
   * next becomes a job of its own, added in one step. If that add fails the batch job fails and BullMQ runs it again;
   * rows already finished are refused by their claims.
   */
  async function processBatch(job: Job<DeliverJobData>, rows: readonly DeliverBatchRow[]): Promise<string> {
    const followUps: FollowUp[] = [];
    const tally = new Map<string, number>();
    await Promise.all(
      rows.map(async (row) => {
        const { result, followUp } = await firstAttempt(row, deps.rowLimit(job.queueName));
        tally.set(result, (tally.get(result) ?? 0) + 1);
        if (followUp) followUps.push(followUp);
      }),
    );
    if (followUps.length > 0) {
      const queue = deps.queueNamed(job.queueName);
      if (!queue) throw new Error(`batch job ${job.id}: queue ${job.queueName} is not one of this process's`);
      await addFollowUps(queue, followUps);
    }
    return [...tally].map(([result, n]) => `${n} ${result}`).join(', ');
  }

  async function firstAttempt(row: DeliverBatchRow, limit: LimitFunction): Promise<{ result: string; followUp?: FollowUp }> {
    const key: LedgerKey = { sourceName: row.sourceName, appCode: row.appCode, sourceEventId: row.sourceEventId, channel: row.channel };
    const ports = deps.portsFor(key.channel);
    if (!ports) {
      deps.logger.warn({ event_id: key.sourceEventId, channel: key.channel }, 'batch row for a channel this deliver process has no sender for; it waits');
      // The source's retry budget is a sender's setting; the ledger decides when retries end, so a wide bound does.
      return { result: 'no-sender', followUp: { row, maxRetryCount: 100, delayMs: 60_000 } };
    }
    const followUp = (delayMs: number, deadLetter?: string): FollowUp => ({
      row,
      maxRetryCount: ports.maxRetryCount(key.sourceName),
      delayMs: Math.max(0, delayMs),
      ...(deadLetter === undefined ? {} : { deadLetter }),
    });
    return limit(async () => {
      try {
        // dueOnly: a re-run of this batch job (its hand-off failed) finds rows already waiting for a retry.
        const decision = await oneAtATime(key, () => deliverOnce(ports, key, { dueOnly: true }));
        switch (decision.action) {
          case 'complete':
            return { result: decision.result };
          case 'delay':
            return { result: 'waiting', followUp: followUp(decision.untilMs - Date.now()) };
          case 'retry':
            return { result: 'retrying', followUp: followUp(decision.delayMs) };
          case 'fail':
            return { result: 'failed', followUp: followUp(0, decision.message) };
          case 'rate_limited':
            return { result: 'rate_limited', followUp: followUp(0) };
        }
      } catch (err) {
        // As for a job of its own (processDeliveryGuarded): not the event's fault, so no attempt is spent.
        const delayMs = retryDelayMs(1, deps.retryBaseMs, deps.retryMaxMs);
        deps.logger.warn(
          { event_id: key.sourceEventId, err: (err as Error).message?.slice(0, 300), retry_in_ms: delayMs },
          'infrastructure error during delivery; the row waits in a job of its own without spending an attempt',
        );
        return { result: 'infrastructure-error', followUp: followUp(delayMs) };
      }
    });
  }
}
