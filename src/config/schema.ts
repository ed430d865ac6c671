import { z } from 'zod';
import { durationMs } from './duration.ts';
import { port } from './primitives.ts';
import { isTimeZone } from '../platform/clock.ts';

export { prioritisedKinds, type OutboxWorkerConfig, type OwnerShardConfig, type MqSubscriptionConfig } from './primitives.ts';

/** RocketMQ 5 proxy (gRPC) consumer settings; each MQ-fed source adds its subscription (rocketmq.room_outbox). */
export const rocketmqShape = {
  enabled: z.boolean().default(false),
  /** The proxy's gRPC address (port 8081), `host:port` or `a:8081;b:8081`; never namesrv 9876. */
  endpoints: z.string().default('127.0.0.1:8081'),
  name_servers: z.unknown().optional(),
  namespace: z.string().default(''),
  access_key: z.string().default(''),
  secret_key: z.string().default(''),
  ssl: z.boolean().default(false),
  request_timeout: durationMs.default(3000),
  /** Bound on the client's startup() and shutdown(), which have no timeout of their own. */
  startup_timeout: durationMs.default(15_000),
};

/** Operator dashboard: bull-board plus the ledger search/requeue page, behind basic auth. */
const dashboard = z.strictObject({
  port: port.default(13200),
  /** Address the dashboard listens on: loopback unless a deployment (compose, a pod behind a proxy) opens it. */
  host: z.string().min(1).default('127.0.0.1'),
  base_path: z
    .string()
    .regex(/^\/[A-Za-z0-9_\-/]*[A-Za-z0-9_-]$/, 'must look like "/admin"')
    .default('/admin'),
  environment: z
    .strictObject({ label: z.string().min(1).default('local'), color: z.string().default('#2e7d32') })
    .default(() => ({ label: 'local', color: '#2e7d32' })),
  /** How often the charts sample queue depth and the oldest pending age (kept for 6 hours, in memory). */
  chart_sample_interval: durationMs.default(30_000),
  /** Every queue read-only (bull-board readOnlyMode, enforced server-side) and requeue disabled. */
  read_only: z.boolean().default(false),
  auth: z
    .strictObject({
      /** Only `environment.label: local` may turn this off. */
      enabled: z.boolean().default(true),
      username: z.string().default('admin'),
      password: z.string().default(''),
      /** Failed logins per client address in 15 minutes before it gets 429s for the rest of the window. */
      max_failed_logins: z.number().int().min(1).default(20),
    })
    .default(() => ({ enabled: true, username: 'admin', password: '', max_failed_logins: 20 })),
});

/**
 * What the source modules say of their kinds and event types, as defaults of the core's per-kind settings: a kind's
 * quota lead (deliver.priority), how soon it goes stale (deliver.expire_after), whether users may turn it off
 * (preferences.mandatory_kinds), and which event types carry a version (deliver.skip_superseded). The core names none.
 */
export interface KindDefaults {
  priority: Record<string, number>;
  expireAfter: Record<string, number>;
  mandatoryKinds: string[];
  /** Event type → skipped when superseded, by default; only these may be turned on. */
  supersedable: Record<string, boolean>;
}

export const NO_KIND_DEFAULTS: KindDefaults = { priority: {}, expireAfter: {}, mandatoryKinds: [], supersedable: {} };

const noticeKindKey = z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, 'a notice kind such as "room_notice"');

/**
 * Quota order by notice kind: a notice queues for Tencent's quota as if committed this much earlier, so a kick goes
 * before balance updates up to a minute older, and a lower kind is never more than the difference behind (it is not
 * starved: once that much older, it goes first). A kind listed here also gets a BullMQ queue of its own, so it is
 * fetched without waiting behind other kinds' backlog; unlisted kinds share one queue with lead 0. `{}` is plain
 * commit-time order in one queue. Every process must run with the same map.
 */
const priorityOf = (kinds: KindDefaults) =>
  z.record(z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, 'a notice kind such as "room_notice"'), durationMs).default(() => ({ ...kinds.priority }));

/**
 * Per event type: finish a notice without sending it (status superseded) when, at its turn to send, the ledger
 * already holds a newer version of it (sent or on its way). Unlisted types keep their default (on for
 * WalletBalanceChanged).
 */
const skipSupersededOf = (kinds: KindDefaults) =>
  z
    .record(z.string(), z.boolean())
    .default(() => ({}))
    .transform((given, ctx) => {
      const merged: Record<string, boolean> = { ...kinds.supersedable, ...given };
      const supersedable = Object.keys(kinds.supersedable);
      for (const [type, on] of Object.entries(merged)) {
        if (on && !supersedable.includes(type)) {
          ctx.addIssue({
            code: 'custom',
            path: [type],
            message: `${type} notices carry no version, so none can supersede another; only ${
              supersedable.join(', ') || 'no type (no source declares one)'
            } can be skipped`,
          });
        }
      }
      return merged;
    });

/** The keys no module owns: connections, the delivery core, the dashboard, health, logging; per-kind defaults from the sources. */
export const coreShapeFor = (kinds: KindDefaults) => ({
  mysql: z.strictObject({
    url: z.string().regex(/^mysql:\/\//, 'must be a mysql:// URL'),
    pool_size: z.number().int().min(1).max(200).default(10),
  }),
  redis: z.strictObject({
    url: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL'),
    // A hash tag keeps every key of a queue in one Redis Cluster slot; each app of `apps` gets its own,
    // `{notice:<app>}` (src/config/redis-keyspace.ts), so a cluster spreads apps over its masters.
    prefix: z
      .string()
      .regex(/^\{[^{}]+\}$/, 'must be a Redis Cluster hash tag such as "{notice}"')
      .default('{notice}'),
    /** Connect as a Redis Cluster client, with `url` as the seed node. */
    cluster: z.boolean().default(false),
  }),
  /**
   * Per event type, the channels its notices go to, instead of what the channels' `kinds` say (for example
   * `SystemNotice: [inbox]`). Unlisted types follow the kinds.
   */
  channel_overrides: z.record(z.string().min(1), z.array(z.string())).default(() => ({})),
  deliver: z
    .strictObject({
      enabled: z.boolean().default(true),
      concurrency: z.number().int().min(1).max(1000).default(32),
      /**
       * Rows of one ingest batch and queue whose first attempt shares one BullMQ job (retries, waits and dead letters
       * get jobs of their own): BullMQ's ~37 Redis commands per job are paid once per batch. 1 gives every row its own job.
       */
      rows_per_job: z.number().int().min(1).max(100).default(16),
      /** First retry delay; later ones grow exponentially with jitter. */
      retry_base_delay: durationMs.default(1000),
      retry_max_delay: durationMs.default(300_000),
      /** BullMQ job lock; a job whose worker died is noticed as stalled after about this long. */
      job_lock_duration: durationMs.default(30_000),
      /** Sends that start but never finish (the worker dies each time) before the event is failed as poison. */
      max_unfinished_attempts: z.number().int().min(1).max(100).default(3),
      priority: priorityOf(kinds),
      skip_superseded: skipSupersededOf(kinds),
      /**
       * Per notice kind, how old (from the fact's commit time) a notice may be when its turn comes; older ones end
       * `expired`, unsent (the inbox keeps them unless inbox.drop_expired lists the kind). Unlisted kinds never expire;
       * by default a room notice (a kick, a reward) is stale after 10 minutes and a balance never is.
       */
      expire_after: z.record(noticeKindKey, durationMs).default(() => ({ ...kinds.expireAfter })),
    })
    .default(() => ({
      enabled: true,
      concurrency: 32,
      rows_per_job: 16,
      retry_base_delay: 1000,
      retry_max_delay: 300_000,
      job_lock_duration: 30_000,
      max_unfinished_attempts: 3,
      priority: { ...kinds.priority },
      skip_superseded: { ...kinds.supersedable },
      expire_after: { ...kinds.expireAfter },
    })),
  /** Finds ledger rows that should be in flight but have no live job, and re-enqueues them (runs inside deliver). */
  reconciler: z
    .strictObject({
      enabled: z.boolean().default(true),
      interval: durationMs.default(5000),
      /** A pending row younger than this is still on its way through ingest's enqueue. */
      pending_grace: durationMs.default(10_000),
      batch_size: z.number().int().min(1).max(10_000).default(500),
    })
    .default(() => ({ enabled: true, interval: 5000, pending_grace: 10_000, batch_size: 500 })),
  /** Ledger retention: final rows older than this are purged in bounded, indexed batches (0 = keep forever). */
  retention: z
    .strictObject({
      delivered: durationMs.default(30 * 24 * 3600 * 1000),
      failed: durationMs.default(0),
      /** MQ messages rejected without a ledger row (notice_rejected_messages), by receive time; 0 keeps them. */
      rejected: durationMs.default(30 * 24 * 3600 * 1000),
      /** Finished revocations whose fact the ledger does not hold (never arrived, or purged), by request time; 0 keeps them. */
      revocations: durationMs.default(30 * 24 * 3600 * 1000),
      purge_batch_size: z.number().int().min(1).max(100_000).default(1000),
    })
    .default(() => ({
      delivered: 30 * 24 * 3600 * 1000,
      failed: 0,
      rejected: 30 * 24 * 3600 * 1000,
      revocations: 30 * 24 * 3600 * 1000,
      purge_batch_size: 1000,
    })),
  dashboard: dashboard.default(() => dashboard.parse({})),
  health: z
    // An orchestrator probes from outside the process's host: all interfaces by default; the answers hold no secrets.
    .strictObject({ host: z.string().min(1).default('0.0.0.0'), grpc_port: port.default(13009), http_port: port.default(13109) })
    .default(() => ({ host: '0.0.0.0', grpc_port: 13009, http_port: 13109 })),
  log: z
    .strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') })
    .default(() => ({ level: 'info' as const })),
  shutdown_timeout: durationMs.default(10_000),
  /** Per-user choices (PreferencesService on the inbox API's listener), enforced when a row's turn comes. */
  preferences: z
    .strictObject({
      enabled: z.boolean().default(true),
      /** Kinds a user cannot turn off (kicks are not optional): Update answers FAILED_PRECONDITION, and they always go. */
      mandatory_kinds: z.array(noticeKindKey).default(() => [...kinds.mandatoryKinds]),
    })
    .default(() => ({ enabled: true, mandatory_kinds: [...kinds.mandatoryKinds] })),
  /**
   * Users' quiet hours (PreferencesService SetQuietHours): per channel, `defer` holds a notice in the ledger until
   * the window ends, `drop` ends it `suppressed` (QUIET_HOURS); channels not listed go at once, a C2C message without
   * its phone notification (PushFlag 1). The inbox is never held, and mandatory kinds always go at once.
   */
  quiet_hours: z
    .strictObject({
      enabled: z.boolean().default(true),
      policy: z
        .record(z.string().min(1), z.enum(['defer', 'drop']))
        .refine((p) => !('inbox' in p), 'quiet_hours.policy.inbox: the inbox is never held (an item waits to be read anyway)')
        .default(() => ({ tencent_push: 'defer' as const })),
    })
    .default(() => ({ enabled: true, policy: { tencent_push: 'defer' as const } })),
  /** How operators see times: every page, the CLI and the audit use this IANA zone, labelled (one clock). */
  display: z
    .strictObject({ time_zone: z.string().refine(isTimeZone, 'an IANA time zone such as "UTC" or "Asia/Shanghai"').default('UTC') })
    .default(() => ({ time_zone: 'UTC' })),
});

/** The core's shape for its type and its key names (the composition builds it with the sources' kind defaults). */
export const coreShape = coreShapeFor(NO_KIND_DEFAULTS);

/**
 * Each module's YAML block, declared by the module beside its shape (`declare module` merging into this interface),
 * so the config type lists every block while this file imports no module: the composition is in src/composition/.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging from each module
export interface ModuleBlocks {}
/** The MQ subscriptions MQ-fed sources add to the `rocketmq` block (room's `room_outbox`), merged the same way. */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging from each MQ-fed source
export interface MqSubscriptions {}

/** What one app's entry under `apps` holds: the core's keys, and each module's per-app block (Tencent's credentials). */
// biome-ignore lint/suspicious/noEmptyInterface: filled by declaration merging from each module with per-app settings
export interface AppBlocks {}

/**
 * The core's keys of one app (`apps.<app_code>`). `redis_tag: deployment` keeps the app's Redis keys under redis.prefix,
 * as a single-app deployment from before the apps list had them; every other app gets a hash tag of its own.
 */
export const coreAppShape = {
  redis_tag: z.enum(['own', 'deployment']).default('own'),
};

/** The parsed YAML block of a module's zod shape. */
export type BlockOf<Shape extends z.ZodRawShape> = z.output<z.ZodObject<Shape, z.core.$strict>>;

/** The keys no module owns, parsed. */
export type CoreConfig = BlockOf<typeof coreShape>;
export type RocketMqConfig = BlockOf<typeof rocketmqShape> & MqSubscriptions;
/** The parsed config: the core keys and every module's block (a test's extra modules read theirs with settingsOf). */
export type AppConfig = BlockOf<typeof coreAppShape> & AppBlocks;
export type NoticeConfig = CoreConfig &
  ModuleBlocks & {
    rocketmq: RocketMqConfig;
    /** The apps this deployment serves, by app_code: a fact of any other app is never sent (UNKNOWN_APP). */
    apps: Record<string, AppConfig>;
  };

/** Limits of the real RocketMQ 5 proxy (ReceiveMessageActivity / ProxyConfig). */
export const PROXY_MIN_INVISIBLE_MS = 10_000;
export const PROXY_MAX_AWAIT_MS = 20_000;
