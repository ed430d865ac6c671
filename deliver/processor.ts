import { DelayedError, UnrecoverableError, Worker, type Job, type Queue } from 'bullmq';
import type { LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import { formatKey, type LedgerKey } from '../src/ledger/types.ts';
import type { NoticeMetrics } from '../src/observability/metrics.ts';
import { addFollowUps, isBatchJobData, type DeliverBatchRow, type DeliverJobData, type DeliverRowData } from '../queues/deliver-queue.ts';
import { retryDelayMs } from '../src/delivery/retry-policy.ts';
import { deliverOnce, type DeliveryPorts } from '../src/delivery/deliver-once.ts';
import { RetryableDeliveryError } from './errors.ts';

export interface DeliverProcessorDeps {
  /** The delivery ports of each channel this worker serves, by channel name. */
  portsFor(channel: string): DeliveryPorts | undefined;
  retryBaseMs: number;
  retryMaxMs: number;
  /** The queue a batch job's rows are handed on to (retries, waits, dead letters): the batch job's own. */
  queueNamed(name: string): Queue<DeliverJobData> | undefined;
  /**
   * Rows of batch jobs sending at once, per queue (its workers' concurrency): a batch job takes one worker slot but
   * carries many rows, and this keeps the rows in flight where a job per row kept them — per queue, so one app's or
   * kind's slow rows never hold the slots of another's.
   */
  rowLimit(queueName: string): LimitFunction;
  /** The row's ledger status now (null: no row), for a dead letter that may have been requeued meanwhile. */
  rowStatus(key: LedgerKey): Promise<string | null>;
  logger: Logger;
  metrics?: NoticeMetrics;
}

/** What a batch job's row needs next, beyond its first attempt: a job of its own. */
interface FollowUp {
  row: DeliverBatchRow;
  maxRetryCount: number;
  delayMs: number;
  deadLetter?: string;
}

/**
 * The thin BullMQ adapter over deliverOnce: job data → ledger key, the delivery decision → what BullMQ does with the
 * job (complete, delay unspent, retry with the ledger's delay, fail for good, rate limit).
 */
export function createDeliverProcessor(deps: DeliverProcessorDeps) {
  /**
   * The rows this process is working on. A row can have two jobs here at once — a batch job's copy and a job of its
   * own the reconciler gave it after Redis lost the batch — and the ledger claim cannot tell them apart (the lock is
   * this worker's either way), so the second waits for the first and then finds the row finished or claimable.
   */
  const inFlight = new Map<string, Promise<unknown>>();
  async function oneAtATime<T>(key: LedgerKey, attempt: () => Promise<T>): Promise<T> {
    const id = formatKey(key);
    for (let running = inFlight.get(id); running; running = inFlight.get(id)) await running.catch(() => undefined);
    const done = attempt();
    inFlight.set(id, done);
    try {
      return await done;
    } finally {
      if (inFlight.get(id) === done) inFlight.delete(id);
    }
  }

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
