import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { LedgerKey } from '../src/ledger/types.ts';
import type { NoticeMetrics } from '../src/observability/metrics.ts';
import type { DeliverJobData } from '../queues/deliver-queue.ts';
import { retryDelayMs } from '../src/delivery/retry-policy.ts';
import { deliverOnce, type DeliveryPorts } from '../src/delivery/deliver-once.ts';
import { RetryableDeliveryError } from './errors.ts';

export interface DeliverProcessorDeps {
  /** The delivery ports of each channel this worker serves, by channel name. */
  portsFor(channel: string): DeliveryPorts | undefined;
  retryBaseMs: number;
  retryMaxMs: number;
  logger: Logger;
  metrics?: NoticeMetrics;
}

/**
 * The thin BullMQ adapter over deliverOnce: job data → ledger key, the delivery decision → what BullMQ does with the
 * job (complete, delay unspent, retry with the ledger's delay, fail for good, rate limit).
 */
export function createDeliverProcessor(deps: DeliverProcessorDeps) {
  /**
   * MySQL (or the process) failing is not the event's fault: such a job waits and comes back without spending one
   * of its attempts. Expected exits (retry, unrecoverable, delayed, rate limit) pass through unchanged.
   */
  return async function processDeliveryGuarded(job: Job<DeliverJobData>, token?: string): Promise<string> {
    try {
      return await processDelivery(job, token);
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

  async function processDelivery(job: Job<DeliverJobData>, token?: string): Promise<string> {
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
    const decision = await deliverOnce(ports, key);
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

function isDeliverJobData(data: unknown): data is DeliverJobData {
  const d = data as Partial<DeliverJobData> | null;
  return typeof d?.sourceName === 'string' && typeof d.appCode === 'string' && typeof d.sourceEventId === 'string' && typeof d.channel === 'string';
}

/** BullMQ backoff strategy: the delay the ledger already recorded, or plain exponential for infrastructure errors. */
export function ledgerBackoff(baseMs: number, maxMs: number) {
  return (attemptsMade: number, _type?: string, err?: Error): number =>
    err instanceof RetryableDeliveryError ? err.retryDelayMs : retryDelayMs(attemptsMade, baseMs, maxMs);
}
