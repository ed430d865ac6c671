import { createHash } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { LedgerKey } from '../src/ledger/types.ts';

/**
 * The contract between ingest and deliver. Every Tencent IM C2C send shares the app's 200 req/s quota through the
 * app-wide send pacer (deliver/send-pacer.ts), which hands slots out by priority. So that a kick is not fetched
 * behind a storm's balance updates, each notice kind with a priority (deliver.priority) has a queue of its own,
 * `deliver-tencent-im-c2c-<kind>`; kinds without one (and jobs from before the split) share DELIVER_QUEUE_NAME.
 */
export const DELIVER_QUEUE_NAME = 'deliver-tencent-im-c2c';

export function deliverQueueName(kind: string | null): string {
  return kind === null ? DELIVER_QUEUE_NAME : `${DELIVER_QUEUE_NAME}-${kind}`;
}

/** The deliver queues of one config: one per prioritised kind plus the shared one. */
export class DeliverQueues {
  private readonly byKind = new Map<string, Queue<DeliverJobData>>();
  readonly shared: Queue<DeliverJobData>;

  constructor(connection: Redis, prefix: string, ownQueueKinds: readonly string[]) {
    this.shared = new Queue<DeliverJobData>(DELIVER_QUEUE_NAME, { connection, prefix });
    for (const kind of ownQueueKinds) this.byKind.set(kind, new Queue<DeliverJobData>(deliverQueueName(kind), { connection, prefix }));
  }

  /** Every queue, the kinds' first and the shared one last. */
  get all(): Array<Queue<DeliverJobData>> {
    return [...this.byKind.values(), this.shared];
  }

  forKind(kind: string): Queue<DeliverJobData> {
    return this.byKind.get(kind) ?? this.shared;
  }

  /** Jobs not yet taken by a worker in the queues these kinds go to (all queues without `kinds`). */
  async queuedJobs(kinds?: readonly string[]): Promise<number> {
    const queues = kinds ? [...new Set(kinds.map((k) => this.forKind(k)))] : this.all;
    const counts = await Promise.all(queues.map((q) => queuedJobs(q)));
    return counts.reduce((a, b) => a + b, 0);
  }

  /** The job of a ledger row, wherever its kind's queue is. */
  getJob(key: LedgerKey & { noticeKind: string }) {
    return this.forKind(key.noticeKind).getJob(deliverJobId(key));
  }

  on(event: 'error', listener: (err: Error) => void): void {
    for (const q of this.all) q.on(event, listener);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.all.map((q) => q.close()));
  }
}

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

export function createDeliverQueues(connection: Redis, prefix: string, ownQueueKinds: readonly string[]): DeliverQueues {
  return new DeliverQueues(connection, prefix, ownQueueKinds);
}

/** Jobs not yet taken by a worker (waiting, prioritized, delayed: retries, back-offs): what max_queued_jobs bounds. */
export function queuedJobs(queue: Queue<DeliverJobData>): Promise<number> {
  return queue.getJobCountByTypes('wait', 'prioritized', 'delayed');
}

export interface EnqueueItem {
  key: LedgerKey;
  eventType: string;
  noticeKind: string;
  maxRetryCount: number;
}

/** Adds jobs to their kinds' queues; see addToQueue. */
export async function enqueueDeliveries(queues: DeliverQueues, items: readonly EnqueueItem[]): Promise<void> {
  const byQueue = new Map<Queue<DeliverJobData>, EnqueueItem[]>();
  for (const item of items) {
    const queue = queues.forKind(item.noticeKind);
    const list = byQueue.get(queue);
    if (list) list.push(item);
    else byQueue.set(queue, [item]);
  }
  // The most urgent kinds' queues first (DeliverQueues.all order), so their jobs are waiting soonest.
  for (const queue of queues.all) {
    const list = byQueue.get(queue);
    if (list) await addToQueue(queue, list);
  }
}

/** Adds jobs in chunks; `addBulk` is atomic per chunk and a duplicate id is ignored by BullMQ. */
export async function addToQueue(queue: Queue<DeliverJobData>, items: readonly EnqueueItem[], chunkSize = 500): Promise<void> {
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
