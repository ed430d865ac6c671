import { createHash } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { LedgerKey } from '../src/ledger/types.ts';

/**
 * The contract between ingest and deliver: one queue per rate-limit domain. Every Tencent IM C2C send shares
 * the app's 200 req/s quota, so every C2C notice goes through this one queue and the app-wide send pacer
 * (deliver/send-pacer.ts).
 */
export const DELIVER_QUEUE_NAME = 'deliver-tencent-im-c2c';

/** Job data is the ledger key only: the payload stays in MySQL, so Redis holds no user content or secrets. */
export interface DeliverJobData extends LedgerKey {
  eventType: string;
}

/**
 * Deterministic job id from the ledger key, so a second enqueue of one event is a no-op while the job exists.
 * Hashed because event ids contain `:` (BullMQ's key separator) and may be long.
 */
export function deliverJobId(key: LedgerKey): string {
  const digest = createHash('sha256')
    .update(`${key.sourceName}\u0000${key.appCode}\u0000${key.sourceEventId}\u0000${key.channel}`)
    .digest('hex')
    .slice(0, 40);
  return `${key.sourceName}-${digest}`;
}

/** Retention keeps the dedup window (completed jobs) and the operator inbox (failed jobs) bounded. */
export const COMPLETED_RETENTION = { age: 3600, count: 20_000 };
export const FAILED_RETENTION = { age: 7 * 24 * 3600, count: 50_000 };

export function deliverJobOptions(key: LedgerKey, maxRetryCount: number): JobsOptions {
  return {
    jobId: deliverJobId(key),
    // 1 try + max_retry_count retries; the ledger's attempt_count is the authority, BullMQ carries the delays.
    attempts: maxRetryCount + 1,
    backoff: { type: 'ledger' },
    removeOnComplete: COMPLETED_RETENTION,
    removeOnFail: FAILED_RETENTION,
  };
}

export function createDeliverQueue(connection: Redis, prefix: string): Queue<DeliverJobData> {
  return new Queue<DeliverJobData>(DELIVER_QUEUE_NAME, { connection, prefix });
}

/** Jobs not yet taken by a worker (waiting, prioritized, delayed: retries, back-offs): what max_queued_jobs bounds. */
export function queuedJobs(queue: Queue<DeliverJobData>): Promise<number> {
  return queue.getJobCountByTypes('wait', 'prioritized', 'delayed');
}

export interface EnqueueItem {
  key: LedgerKey;
  eventType: string;
  maxRetryCount: number;
}

/** Adds jobs in chunks; `addBulk` is atomic per chunk and a duplicate id is ignored by BullMQ. */
export async function enqueueDeliveries(queue: Queue<DeliverJobData>, items: readonly EnqueueItem[], chunkSize = 500): Promise<void> {
  for (let i = 0; i < items.length; i += chunkSize) {
    const chunk = items.slice(i, i + chunkSize);
    await queue.addBulk(
      chunk.map((item) => ({
        name: item.eventType,
        // Pick the key fields explicitly: callers may pass whole ledger rows, whose payload must not reach Redis.
        data: { sourceName: item.key.sourceName, appCode: item.key.appCode, sourceEventId: item.key.sourceEventId, channel: item.key.channel, eventType: item.eventType },
        opts: deliverJobOptions(item.key, item.maxRetryCount),
      })),
    );
  }
}
