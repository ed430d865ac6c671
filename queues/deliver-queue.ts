import { createHash } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { LedgerKey } from '../src/ledger/types.ts';
import { appRedisPrefix } from '../src/config/redis-keyspace.ts';

/**
 * The contract between ingest and deliver: one BullMQ queue per (channel, notice kind with a queue of its own), and
 * one shared queue per channel for its other kinds. Every Tencent IM C2C send shares the app's 200 req/s quota through
 * the app-wide send pacer (src/tencent-im/send-pacer.ts), which hands slots out by priority; so that a
 * kick is not fetched behind a storm's balance updates, each kind with a priority (deliver.priority) has a C2C queue
 * of its own, `deliver-tencent-im-c2c-<kind>`. Other channels are named the same way: `deliver-inbox`.
 */
export const DELIVER_QUEUE_NAME = 'deliver-tencent-im-c2c';

/**
 * `deliver-<channel>` (underscores as dashes), `-<kind>` for a kind with a queue of its own, `.<app>` for an app of
 * `apps` with a Redis tag of their own (each app's queues of its own, so one app's backlog is never fetched ahead of another's notices).
 */
export function deliverQueueName(channel: string, kind: string | null, app: string | null = null): string {
  const base = `deliver-${channel.replace(/_/g, '-')}`;
  return `${kind === null ? base : `${base}-${kind}`}${app === null ? '' : `.${app}`}`;
}

/** The queues one channel has: the kinds with their own queue, for the default app group and each listed app. */
export interface ChannelQueueSpec {
  channel: string;
  ownQueueKinds: readonly string[];
  /** Apps with queues of their own (`apps` with a tag of their own); every other app_code uses the unsuffixed queues. */
  apps?: readonly string[];
}

/**
 * BullMQ's events stream per queue (an entry per job added, started, finished) is read by no one here: no QueueEvents,
 * and the board reads the job lists. BullMQ keeps 10,000 entries by default, ~1.15 MB per queue — with batch jobs the
 * largest thing left in Redis at rest (4.7 of 8.7 MB in the soak), still filling 8 minutes in at 80 facts/s. The last
 * 1,000 stay for a look with XRANGE.
 */
export const EVENTS_STREAM_MAX_LEN = 1000;

class ChannelQueues {
  readonly byKind = new Map<string, Queue<DeliverJobData>>();
  readonly shared: Queue<DeliverJobData>;

  constructor(connection: Redis, prefix: string, spec: ChannelQueueSpec, app: string | null) {
    const options = { connection, prefix, streams: { events: { maxLen: EVENTS_STREAM_MAX_LEN } } };
    for (const kind of spec.ownQueueKinds) this.byKind.set(kind, new Queue<DeliverJobData>(deliverQueueName(spec.channel, kind, app), options));
    this.shared = new Queue<DeliverJobData>(deliverQueueName(spec.channel, null, app), options);
  }

  get all(): Array<Queue<DeliverJobData>> {
    return [...this.byKind.values(), this.shared];
  }
}

/** One channel's queue groups: the default one (unsuffixed names) and one per app with queues of its own. */
class ChannelGroups {
  readonly fallback: ChannelQueues;
  readonly byApp = new Map<string, ChannelQueues>();

  constructor(connection: Redis, prefix: string, spec: ChannelQueueSpec) {
    this.fallback = new ChannelQueues(connection, prefix, spec, null);
    // Each app's queues under its own hash tag, so a Redis Cluster spreads apps over its masters.
    for (const app of spec.apps ?? []) this.byApp.set(app, new ChannelQueues(connection, appRedisPrefix(prefix, app), spec, app));
  }

  get groups(): ChannelQueues[] {
    return [this.fallback, ...this.byApp.values()];
  }

  of(app: string | undefined): ChannelQueues {
    return (app === undefined ? undefined : this.byApp.get(app)) ?? this.fallback;
  }
}

/** Where a delivery's job lives: its channel, its notice kind and its app. */
export interface QueueRoute {
  channel: string;
  noticeKind: string;
  appCode?: string;
}

/** The deliver queues of one config, for every routed channel. */
export class DeliverQueues {
  private readonly channels = new Map<string, ChannelGroups>();

  constructor(
    /** The Redis connection every queue here shares (a health probe pings it). */
    readonly connection: Redis,
    prefix: string,
    specs: readonly ChannelQueueSpec[],
  ) {
    for (const spec of specs) this.channels.set(spec.channel, new ChannelGroups(connection, prefix, spec));
  }

  /** Every queue: per channel and app group, the kinds' first and the shared one last. */
  get all(): Array<Queue<DeliverJobData>> {
    return [...this.channels.values()].flatMap((c) => c.groups.flatMap((g) => g.all));
  }

  /** The channels these queues serve, in registry order. */
  get channelNames(): string[] {
    return [...this.channels.keys()];
  }

  /** A channel's queues, every app group. */
  ofChannel(channel: string): Array<Queue<DeliverJobData>> {
    return this.channels.get(channel)?.groups.flatMap((g) => g.all) ?? [];
  }

  /** A channel's queues by app group (the default group first): each group gets fetch lanes of its own. */
  groupsOfChannel(channel: string): Array<Array<Queue<DeliverJobData>>> {
    return this.channels.get(channel)?.groups.map((g) => g.all) ?? [];
  }

  /** The queue of a delivery; throws for a channel with no queues here (a config that does not route to it). */
  queueFor(route: QueueRoute): Queue<DeliverJobData> {
    const groups = this.channels.get(route.channel);
    if (!groups) throw new Error(`no deliver queue for channel "${route.channel}": this config routes no notice kind to it`);
    const queues = groups.of(route.appCode);
    return queues.byKind.get(route.noticeKind) ?? queues.shared;
  }

  /** Jobs not yet taken by a worker, over every queue (what the reconciler's refill is bounded by). */
  async queuedJobs(): Promise<number> {
    const counts = await Promise.all(this.all.map((q) => queuedJobs(q)));
    return counts.reduce((a, b) => a + b, 0);
  }

  /** The app group whose queues an app_code's jobs go to: the app itself when it has queues of its own, else '' (the default group). */
  appGroupOf(appCode: string): string {
    return [...this.channels.values()].some((c) => c.byApp.has(appCode)) ? appCode : '';
  }

  /** Jobs not yet taken by a worker in the queues these kinds go to, per app group ('' = the default group). */
  async queuedJobsByGroup(kinds: readonly string[]): Promise<Map<string, number>> {
    const byGroup = new Map<string, number>();
    await Promise.all(
      [...this.channels.values()].flatMap((c) =>
        [['', c.fallback] as const, ...c.byApp].map(async ([group, g]) => {
          const queues = [...new Set(kinds.map((kind) => g.byKind.get(kind) ?? g.shared))];
          const counts = await Promise.all(queues.map((q) => queuedJobs(q)));
          byGroup.set(group, (byGroup.get(group) ?? 0) + counts.reduce((a, b) => a + b, 0));
        }),
      ),
    );
    return byGroup;
  }

  /** The job of a ledger row, wherever its channel, kind and app put it (undefined for a channel without queues here). */
  async getJob(key: LedgerKey & { noticeKind: string }) {
    if (!this.channels.has(key.channel)) return undefined;
    return this.queueFor(key).getJob(deliverJobId(key));
  }

  /** The batch job that carries a row's first attempt, while it exists (undefined for a row with no batch). */
  async getBatchJob(key: LedgerKey & { noticeKind: string; batchJobId?: string | null }) {
    if (!key.batchJobId || !this.channels.has(key.channel)) return undefined;
    return this.queueFor(key).getJob(key.batchJobId);
  }

  on(event: 'error', listener: (err: Error) => void): void {
    for (const q of this.all) q.on(event, listener);
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.all.map((q) => q.close()));
  }
}

/** Job data is the ledger key only: the payload stays in MySQL, so Redis holds no user content or secrets. */
export interface DeliverRowData extends LedgerKey {
  eventType: string;
  /**
   * A row a batch job already failed for good (dead letter): the job only lands in the failed set, where the board
   * shows dead letters, and touches nothing else.
   */
  deadLetter?: string;
}

/**
 * The first attempt of several rows of one queue from one ingest batch (deliver.rows_per_job): BullMQ's cost per
 * job (~37 Redis commands: add, fetch, finish and their events) is paid once for them all. Anything after the first
 * attempt — a retry, a deferral, a rate-limit answer, a dead letter — goes on in a job of the row's own.
 */
export interface DeliverBatchData {
  rows: DeliverBatchRow[];
}

/** A batch's row: its key, and what a follow-up job of its own is named by (the board finds a user's jobs by name). */
export interface DeliverBatchRow extends DeliverRowData {
  noticeKind: string;
  userId?: string;
}

export type DeliverJobData = DeliverRowData | DeliverBatchData;

export function isBatchJobData(data: DeliverJobData): data is DeliverBatchData {
  return Array.isArray((data as Partial<DeliverBatchData> | null)?.rows);
}

/**
 * Deterministic job id from the ledger key, so a second enqueue of one event is a no-op while the job exists.
 * Hashed because event ids contain `:` (BullMQ's key separator) and may be long.
 */
export function deliverJobId(key: LedgerKey): string {
  const digest = createHash('sha256').update(`${key.sourceName}\u0000${key.appCode}\u0000${key.sourceEventId}\u0000${key.channel}`).digest('hex').slice(0, 40);
  return `${key.sourceName}-${digest}`;
}

/** A batch job's id: deterministic in its rows, so re-enqueuing the same ingest batch is a no-op while the job exists. */
export function batchJobId(keys: readonly LedgerKey[]): string {
  const hash = createHash('sha256');
  for (const key of keys) hash.update(`${key.sourceName}\u0000${key.appCode}\u0000${key.sourceEventId}\u0000${key.channel}\u0001`);
  return `${keys[0]!.sourceName}-b-${hash.digest('hex').slice(0, 40)}`;
}

/**
 * A completed job is removed as it completes: the claim refuses a finished row, so a second enqueue of one (a batch
 * re-read after a crash) only costs a job that completes `already-delivered`; a kept job bought nothing but memory
 * (~1.6 KB each, up to 20,000 per queue; docs/decisions/0009). Failed jobs stay: they are the board's dead letters.
 */
export const FAILED_RETENTION = { age: 7 * 24 * 3600, count: 50_000 };

export function deliverJobOptions(key: LedgerKey, maxRetryCount: number): JobsOptions {
  return {
    jobId: deliverJobId(key),
    // 1 try + max_retry_count retries; the ledger's attempt_count is the authority, BullMQ carries the delays.
    attempts: maxRetryCount + 1,
    backoff: { type: 'ledger' },
    removeOnComplete: true,
    removeOnFail: FAILED_RETENTION,
    // A failed attempt's reason is the provider's answer; a stack trace would show the server's paths on the board.
    stackTraceLimit: 0,
  };
}

/** A job's name on the board: what it is and for whom, so an operator can find a user's or an event's job. */
export function deliverJobName(item: { key: LedgerKey; eventType: string; noticeKind: string; userId?: string }): string {
  return `${item.noticeKind} ${item.eventType}${item.userId ? ` → user ${item.userId}` : ''} · ${item.key.sourceEventId}`.slice(0, 200);
}

export function createDeliverQueues(connection: Redis, prefix: string, specs: readonly ChannelQueueSpec[]): DeliverQueues {
  return new DeliverQueues(connection, prefix, specs);
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
  /** The recipient, for the job's name only (it is not job data). */
  userId?: string;
  /** The batch job this item's first attempt rides in (planBatches); without one, a job of its own. */
  batchJobId?: string | null;
}

/**
 * Splits items into batch jobs: per queue, in order, chunks of up to `rowsPerJob`. Returns each item's batch job id,
 * by index (null: a job of its own). A chunk of one keeps a job of its own (a batch buys nothing there), as does
 * every item when rowsPerJob is 1.
 */
export function planBatches(queues: DeliverQueues, items: ReadonlyArray<Pick<EnqueueItem, 'key' | 'noticeKind'>>, rowsPerJob: number): Array<string | null> {
  const plan: Array<string | null> = new Array(items.length).fill(null);
  if (rowsPerJob <= 1) return plan;
  const indexed = items.map((item, index) => ({ key: item.key, noticeKind: item.noticeKind, index }));
  for (const list of groupByQueue(queues, indexed).values())
    for (let i = 0; i < list.length; i += rowsPerJob) {
      const chunk = list.slice(i, i + rowsPerJob);
      if (chunk.length < 2) continue;
      const id = batchJobId(chunk.map((item) => item.key));
      for (const item of chunk) plan[item.index] = id;
    }
  return plan;
}

function groupByQueue<T extends Pick<EnqueueItem, 'key' | 'noticeKind'>>(queues: DeliverQueues, items: readonly T[]): Map<Queue<DeliverJobData>, T[]> {
  const byQueue = new Map<Queue<DeliverJobData>, T[]>();
  for (const item of items) {
    const queue = queues.queueFor({ channel: item.key.channel, noticeKind: item.noticeKind, appCode: item.key.appCode });
    const list = byQueue.get(queue);
    if (list) list.push(item);
    else byQueue.set(queue, [item]);
  }
  return byQueue;
}

/** Adds jobs to their kinds' queues, items that name a batch job as that batch job's rows; see addToQueue. */
export async function enqueueDeliveries(queues: DeliverQueues, items: readonly EnqueueItem[]): Promise<void> {
  const byQueue = groupByQueue(queues, items);
  // The most urgent kinds' queues first (DeliverQueues.all order), so their jobs are waiting soonest.
  for (const queue of queues.all) {
    const list = byQueue.get(queue);
    if (list) await addToQueue(queue, list);
  }
}

function rowData(item: EnqueueItem): DeliverRowData {
  // Pick the key fields explicitly: callers may pass whole ledger rows, whose payload must not reach Redis.
  return {
    sourceName: item.key.sourceName,
    appCode: item.key.appCode,
    sourceEventId: item.key.sourceEventId,
    channel: item.key.channel,
    eventType: item.eventType,
  };
}

/** A row of a batch job's data: one literal (no spreads, a hot path), userId left out of the JSON when absent. */
function batchRow(item: EnqueueItem): DeliverBatchRow {
  return {
    sourceName: item.key.sourceName,
    appCode: item.key.appCode,
    sourceEventId: item.key.sourceEventId,
    channel: item.key.channel,
    eventType: item.eventType,
    noticeKind: item.noticeKind,
    userId: item.userId || undefined,
  };
}

/** A batch job's name on the board: how many rows, of what, and the first event's id to find it by. */
function batchJobName(items: readonly EnqueueItem[]): string {
  const first = items[0]!;
  const mixed = items.some((i) => i.eventType !== first.eventType) ? ' …' : '';
  return `${items.length} × ${first.noticeKind} ${first.eventType}${mixed} · first ${first.key.sourceEventId}`.slice(0, 200);
}

/** The options of a batch job: its rows' retries are jobs of their own, so the batch itself only retries handing them off. */
export const BATCH_JOB_OPTIONS = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: true,
  removeOnFail: FAILED_RETENTION,
  stackTraceLimit: 0,
} satisfies Omit<JobsOptions, 'jobId'>;

type BulkJob = Parameters<Queue<DeliverJobData>['addBulk']>[0][number];

/** Adds jobs in chunks; `addBulk` is atomic per chunk and a duplicate id is ignored by BullMQ. */
export async function addToQueue(queue: Queue<DeliverJobData>, items: readonly EnqueueItem[], chunkSize = 500): Promise<void> {
  const jobs: BulkJob[] = [];
  const batches = new Map<string, EnqueueItem[]>();
  for (const item of items) {
    const batch = item.batchJobId;
    if (!batch) {
      jobs.push({ name: deliverJobName(item), data: rowData(item), opts: deliverJobOptions(item.key, item.maxRetryCount) });
      continue;
    }
    const members = batches.get(batch);
    if (members) members.push(item);
    else batches.set(batch, [item]);
  }
  for (const [jobId, members] of batches)
    jobs.push({
      name: batchJobName(members),
      data: { rows: members.map(batchRow) },
      opts: { ...BATCH_JOB_OPTIONS, jobId },
    });
  for (let i = 0; i < jobs.length; i += chunkSize) await queue.addBulk(jobs.slice(i, i + chunkSize));
}

/** Jobs of their own for rows a batch job handed on: retries and waits as delayed jobs, dead letters to fail at once. */
export async function addFollowUps(
  queue: Queue<DeliverJobData>,
  followUps: ReadonlyArray<{ row: DeliverBatchRow; maxRetryCount: number; delayMs: number; deadLetter?: string }>,
): Promise<void> {
  await queue.addBulk(
    followUps.map((f) => {
      const item: EnqueueItem = { key: f.row, eventType: f.row.eventType, noticeKind: f.row.noticeKind, userId: f.row.userId, maxRetryCount: f.maxRetryCount };
      const data = rowData(item);
      if (f.deadLetter !== undefined) data.deadLetter = f.deadLetter;
      return {
        name: deliverJobName(item),
        data,
        opts: { ...deliverJobOptions(item.key, item.maxRetryCount), ...(f.delayMs > 0 ? { delay: f.delayMs } : {}) },
      };
    }),
  );
}
