import { z } from 'zod';
import { durationMs } from './duration.ts';

/** Shared shapes every config fragment (core, channel, source) is built from. */
export const mysqlIdentifier = z.string().regex(/^[A-Za-z0-9_]{1,64}$/, 'must be a plain MySQL identifier (letters, digits, _)');
export const port = z.number().int().min(0).max(65535);
export const noticeKind = z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, 'a notice kind such as "room_notice"');
export const kindList = z.array(z.union([noticeKind, z.literal('*')]));
export const appCode = z.string().regex(/^[A-Za-z0-9_.-]{1,32}$/, 'an app_code such as "lalu"');

export const ownerUrl = z.string().regex(/^mysql:\/\//, 'must be a mysql:// URL (a user that may only SELECT the outbox)');
/** One shard of an owner outbox: where it is. `name` keys its cursor (`<source>:<name>`), metrics and readiness. */
const ownerShard = z.strictObject({
  name: z.string().regex(/^[a-z0-9_]{1,24}$/, 'a short name such as "s1" (letters, digits, _)'),
  mysql_url: ownerUrl.optional(),
  database: mysqlIdentifier,
});
export const ownerShards = z
  .array(ownerShard)
  .max(64)
  .default(() => [])
  .superRefine((shards, ctx) => {
    const seen = new Set<string>();
    shards.forEach((s, i) => {
      if (seen.has(s.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `shard name "${s.name}" is used twice` });
      seen.add(s.name);
    });
  });
export type OwnerShardConfig = z.infer<typeof ownerShard>;

/** One outbox poller (wallet_notice_worker, room_notice_worker): the seed's keys plus gap handling. */
export const outboxWorker = z.strictObject({
  enabled: z.boolean().default(false),
  poll_interval: durationMs.default(500),
  batch_size: z.number().int().min(1).max(5000).default(100),
  lock_ttl: durationMs.default(30_000),
  max_retry_count: z.number().int().min(0).max(1000).default(10),
  /** How long a hole in the outbox id sequence is waited for before it is skipped; longer than the owner's longest transaction. */
  gap_grace: durationMs.default(60_000),
  /**
   * A hole past gap_grace is not forgotten: it is re-checked by primary key at growing intervals (gap_grace, then
   * doubling, at most hourly) until this long after it was first seen, so an owner transaction that commits later
   * than we guessed is still delivered.
   */
  late_commit_horizon: durationMs.default(24 * 3600 * 1000),
  /** A source whose polls have failed for this long turns readiness and notice_ingest_stalled red. */
  stall_threshold: durationMs.default(60_000),
  /**
   * Where a source with no saved cursor starts: `earliest` sends every row already in the outbox, `latest` only
   * rows committed from now on (for a first deployment on an outbox with history). A saved cursor always wins.
   */
  start_from: z.enum(['earliest', 'latest']).default('earliest'),
  /**
   * Backpressure: while the deliver queue holds this many jobs waiting or delayed, read no new rows (holes are
   * still re-read). The outbox keeps the rest, so a long outage or a rate-limited backlog does not move the whole
   * backlog into Redis. 0 = no limit. Like Debezium's max.queue.size.
   */
  max_queued_jobs: z.number().int().min(0).default(8192),
});
export type OutboxWorkerConfig = z.infer<typeof outboxWorker>;

/**
 * The config keys of an outbox-fed source, all named after its key (`wallet` → wallet_database, wallet_mysql_url,
 * wallet_shards, wallet_notice_worker): the seed's names, and the same for every source.
 */
export function outboxSourceShape<K extends string>(key: K, defaultDatabase: string) {
  return {
    [`${key}_database`]: mysqlIdentifier.default(defaultDatabase),
    /** The owner's own server for its outbox (a read-only user); default: mysql.url's server. */
    [`${key}_mysql_url`]: ownerUrl.optional(),
    /** An outbox split over several servers or databases: each shard its own cursor and gap tracker, one source name. */
    [`${key}_shards`]: ownerShards,
    [`${key}_notice_worker`]: outboxWorker.default(() => outboxWorker.parse({})),
  } as {
    [P in `${K}_database`]: z.ZodDefault<typeof mysqlIdentifier>;
  } & { [P in `${K}_mysql_url`]: z.ZodOptional<typeof ownerUrl> } & { [P in `${K}_shards`]: typeof ownerShards } & {
    [P in `${K}_notice_worker`]: z.ZodDefault<typeof outboxWorker>;
  };
}

/** A RocketMQ subscription a source reads besides its outbox (rocketmq.<key>). Defaults are values the real proxy accepts. */
export function mqSubscription(defaults: { topic: string; consumer_group: string }) {
  const shape = z.strictObject({
    enabled: z.boolean().default(false),
    topic: z.string().min(1).default(defaults.topic),
    consumer_group: z
      .string()
      .regex(/^[%A-Za-z0-9_-]{1,255}$/, 'letters, digits, _ - % only')
      .default(defaults.consumer_group),
    /** Deliveries after which a message that still fails is recorded as rejected and acked. */
    consumer_max_reconsume_times: z.number().int().min(1).max(1000).default(16),
    receive_batch_size: z.number().int().min(1).max(32).default(16),
    /** How long a received message stays hidden; the real proxy rejects < 10s. Also the redelivery delay. */
    invisible_duration: durationMs.default(30_000),
    /** Long-poll wait per receive; the real proxy caps it at 20s. */
    await_duration: durationMs.default(20_000),
  });
  return shape.default(() => shape.parse({}));
}
export type MqSubscriptionConfig = z.infer<ReturnType<typeof mqSubscription>>;

/** The kinds with a queue of their own, highest lead first (the order their queues are filled and listed). */
export function prioritisedKinds(config: { deliver: { priority: Record<string, number> } }): string[] {
  return Object.entries(config.deliver.priority)
    .sort((a, b) => b[1] - a[1])
    .map(([kind]) => kind);
}
