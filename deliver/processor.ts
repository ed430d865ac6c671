import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { LedgerKey } from '../src/ledger/types.ts';
import { isBatchJobData, type DeliverJobData, type DeliverRowData } from '../queues/deliver-queue.ts';
import { batchProcessor } from './batch-processor.ts';
import type { DeliverProcessorDeps } from './processor-deps.ts';
import { OneRowAtATime } from './one-row-at-a-time.ts';
import { retryDelayMs } from '../src/delivery/retry-policy.ts';
import { deliverOnce } from '../src/delivery/deliver-once.ts';
import { RetryableDeliveryError } from './errors.ts';

export type { DeliverProcessorDeps } from './processor-deps.ts';

/**
 * The thin BullMQ adapter over deliverOnce: job data → ledger key, the delivery decision → what BullMQ does with the
 * job (complete, delay unspent, retry with the ledger's delay, fail for good, rate limit).
 */
export function createDeliverProcessor(deps: DeliverProcessorDeps) {
  const rows = new OneRowAtATime();
  const oneAtATime = <T>(key: LedgerKey, attempt: () => Promise<T>) => rows.run(key, attempt);
  const processBatch = batchProcessor(deps, oneAtATime);

  /**
   * MySQL (or the process) failing is not the event's fault: such a job waits and comes back without spending one
   * of its attempts. Expected exits (retry, unrecoverable, delayed, rate limit) pass through unchanged.
   */
  return async function processDeliveryGuarded(job: Job<DeliverJobData>, token?: string): Promise<string> {
    if (isBatchJobData(job.data)) return processBatch(job, job.data.rows);
    try {
      return await processDelivery(job as Job<DeliverRowData>, token);
    } catch (err) {
      if (
        err instanceof RetryableDeliveryError ||
        err instanceof UnrecoverableError ||
        err instanceof DelayedError ||
        (err as Error).message === Worker.RateLimitError().message
      )
        throw err;
      const delayMs = retryDelayMs(Math.min(job.attemptsStarted ?? 1, 8), deps.retryBaseMs, deps.retryMaxMs);
      deps.logger.warn(
        { event_id: job.data.sourceEventId, job_id: job.id, err: (err as Error).message?.slice(0, 300), retry_in_ms: delayMs },
        'infrastructure error during delivery; the job waits without spending an attempt',
      );
      await job.moveToDelayed(Date.now() + delayMs, token);
      throw new DelayedError();
    }
  };

  /**
   * A row a batch job failed for good: its job only shows the dead letter on the board. The batch adds it after its
   * other rows are done, so an operator may have requeued the row in between (and it may be delivered by now): then
   * there is no dead letter to show, and the job completes.
   */
  async function showDeadLetter(data: DeliverRowData, reason: string): Promise<string> {
    const key: LedgerKey = { sourceName: data.sourceName, appCode: data.appCode, sourceEventId: data.sourceEventId, channel: data.channel };
    const status = await deps.rowStatus(key);
    if (status !== null && status !== 'failed') return `dead-letter-outdated: the row is ${status} now`;
    throw new UnrecoverableError(reason);
  }

  async function processDelivery(job: Job<DeliverRowData>, token?: string): Promise<string> {
    if (typeof job.data?.deadLetter === 'string' && isDeliverJobData(job.data)) return showDeadLetter(job.data, job.data.deadLetter);
    if (!isDeliverJobData(job.data)) {
      // A ghost: the id was still queued but its hash was lost (partial Redis loss), so BullMQ hands over an empty
      // stub. Its key is unknowable from a hashed id; the reconciler re-adds the row from the ledger.
      deps.metrics?.ghostJobs.inc();
      deps.logger.debug({ job_id: job.id }, 'job without data (its Redis hash was lost); dropped, the reconciler re-adds the row');
      return 'ghost-job';
    }
    const key: LedgerKey = { sourceName: job.data.sourceName, appCode: job.data.appCode, sourceEventId: job.data.sourceEventId, channel: job.data.channel };
    const ports = deps.portsFor(key.channel);
    if (!ports) {
      // A job of a channel this process does not run (a config change while jobs were queued): not ours to drop.
      deps.logger.warn({ job_id: job.id, channel: key.channel }, 'job for a channel this deliver process has no sender for; it waits');
      await job.moveToDelayed(Date.now() + 60_000, token);
      throw new DelayedError();
    }
    const decision = await oneAtATime(key, () => deliverOnce(ports, key));
    switch (decision.action) {
      case 'complete':
        return decision.result;
      case 'delay':
        await job.moveToDelayed(decision.untilMs, token);
        throw new DelayedError();
      case 'retry':
        throw new RetryableDeliveryError(decision.message, decision.delayMs);
      case 'fail':
        throw new UnrecoverableError(decision.message);
      case 'rate_limited':
        // BullMQ recognises a rate-limit exit by its own error, which puts the job back in wait unspent.
        throw Worker.RateLimitError();
    }
  }
}

function isDeliverJobData(data: unknown): data is DeliverRowData {
  const d = data as Partial<DeliverRowData> | null;
  return typeof d?.sourceName === 'string' && typeof d.appCode === 'string' && typeof d.sourceEventId === 'string' && typeof d.channel === 'string';
}

/** BullMQ backoff strategy: the delay the ledger already recorded, or plain exponential for infrastructure errors. */
export function ledgerBackoff(baseMs: number, maxMs: number) {
  return (attemptsMade: number, _type?: string, err?: Error): number =>
    err instanceof RetryableDeliveryError ? err.retryDelayMs : retryDelayMs(attemptsMade, baseMs, maxMs);
}
