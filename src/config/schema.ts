import { z } from 'zod';
import { durationMs } from './duration.ts';

const mysqlIdentifier = z.string().regex(/^[A-Za-z0-9_]{1,64}$/, 'must be a plain MySQL identifier (letters, digits, _)');
const port = z.number().int().min(0).max(65535);
const noticeKind = z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, 'a notice kind such as "room_notice"');
const kindList = z.array(z.union([noticeKind, z.literal('*')]));
const DEFAULT_INBOX_KINDS = ['activity_notice', 'vip_notice', 'room_notice'] as const;


const ownerUrl = z.string().regex(/^mysql:\/\//, 'must be a mysql:// URL (a user that may only SELECT the outbox)');
/** One shard of an owner outbox: where it is. `name` keys its cursor (`<source>:<name>`), metrics and readiness. */
const ownerShard = z.strictObject({
  name: z.string().regex(/^[a-z0-9_]{1,24}$/, 'a short name such as "s1" (letters, digits, _)'),
  mysql_url: ownerUrl.optional(),
  database: mysqlIdentifier,
});
const ownerShards = z.array(ownerShard).max(64).default(() => []).superRefine((shards, ctx) => {
  const seen = new Set<string>();
  shards.forEach((s, i) => {
    if (seen.has(s.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `shard name "${s.name}" is used twice` });
    seen.add(s.name);
  });
});
export type OwnerShardConfig = z.infer<typeof ownerShard>;

/** One outbox poller (wallet_notice_worker, room_notice_worker): the seed's keys plus gap handling. */
const outboxWorker = z.strictObject({
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

/** One app_code's own Tencent IM app: its account, key, and (optionally) its own quota and endpoint. */
const tencentApp = z.strictObject({
  sdk_app_id: z.number().int().positive(),
  /** From the environment (`${TENCENT_IM_SECRET_KEY_HALA}`), never in the file. */
  secret_key: z.string().min(1, 'required (from the environment, e.g. ${TENCENT_IM_SECRET_KEY_<APP>})'),
  admin_identifier: z.string().min(1).optional(),
  /** sendmsg requests per second for this app (default tencent_im.rate_limit_per_second). */
  rate_limit_per_second: z.number().int().min(0).optional(),
  /** timpush/batch calls per second for this app (default tencent_push.rate_limit_per_second). */
  push_rate_limit_per_second: z.number().int().min(0).optional(),
  base_url: z.url().optional(),
});
export type TencentAppConfig = z.infer<typeof tencentApp>;

/** Tencent IM REST API (sendmsg) settings. */
const tencentIm = z.strictObject({
  enabled: z.boolean().default(false),
  /**
   * Which app_code the single-app keys below (sdk_app_id, secret_key, …) serve. Either this or `apps` is required:
   * a deployment always knows which apps it serves, and a fact of any other app is never sent (UNKNOWN_APP).
   */
  app_code: z.string().regex(/^[A-Za-z0-9_.-]{1,32}$/, 'an app_code such as "lalu"').optional(),
  /** Each app_code its own Tencent app (sdk_app_id, secret_key, quota); the keys below are the shared defaults. */
  apps: z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,32}$/, 'an app_code such as "lalu"'), tencentApp).default(() => ({})),
  base_url: z.url().default('https://console.tim.qq.com'),
  sdk_app_id: z.number().int().positive().default(1400000000),
  secret_key: z.string().default(''),
  admin_identifier: z.string().min(1).default('administrator'),
  request_timeout: durationMs.default(3000),
  /**
   * A kept-alive connection idle this long is closed by us, before a proxy or NAT on the way drops it silently: a
   * request written into a dropped connection is reset unanswered and, for a push, could not be told from one that
   * arrived. Keep it below every idle timeout between here and Tencent.
   */
  idle_socket_timeout: durationMs.default(4000),
  rate_limit_per_second: z.number().int().min(0).default(200),
  /** Lifetime of the cached admin UserSig; it is re-minted well before it runs out. */
  usersig_ttl: durationMs.default(24 * 3600 * 1000),
  /** Offline storage time of a notice (MsgLifeTime); Tencent caps it at 7 days. */
  msg_lifetime: durationMs.default(7 * 24 * 3600 * 1000),
  /** The notice kinds sent as C2C messages; `["*"]` is every kind. */
  kinds: kindList.default(() => ['*']),
});

const pushTemplate = z.strictObject({ title: z.string().min(1).max(500), body: z.string().min(1).max(2000) });

/**
 * The phone notification a notice becomes: on the C2C message (OfflinePushInfo, pushed by Tencent when the user is
 * offline) and on the tencent_push channel. Templates are per event type or notice kind, then per language.
 */
const offlinePush = z.strictObject({
  /** Kinds whose C2C message carries PushFlag 1 (no phone notification): balance updates are state, not news. */
  no_push_kinds: z.array(z.string()).default(() => ['wallet_notice']),
  /** `{{field}}` is the payload's field (or its `params` field). */
  templates: z.record(z.string().min(1), z.record(z.string().min(1), pushTemplate)).default(() => ({
    vip_notice: { en: { title: 'VIP {{vip_name}}', body: 'Your VIP level is now {{level}}.' }, zh: { title: 'VIP {{vip_name}}', body: '你的 VIP 等级已变为 {{level}}。' } },
    activity_notice: { en: { title: 'Activity', body: 'You have a new activity notice.' }, zh: { title: '活动', body: '你有一条新的活动通知。' } },
    room_notice: { en: { title: 'Room', body: 'You have a new room notice.' }, zh: { title: '房间', body: '你有一条新的房间通知。' } },
  })),
  /** The payload field that names the user's language, when the owner service sends one. */
  language_field: z.string().min(1).default('language'),
  default_language: z.string().min(1).default('en'),
  /** Vendor classes for private messages (keeps notices out of marketing quotas); see docs/how-it-works.md, "Phone pushes". */
  vendor: z.strictObject({
    huawei_category: z.string().default('IM'),
    huawei_importance: z.enum(['LOW', 'NORMAL']).default('NORMAL'),
    honor_importance: z.enum(['LOW', 'NORMAL']).default('NORMAL'),
    oppo_category: z.string().default('IM'),
    vivo_classification: z.union([z.literal(0), z.literal(1)]).default(1),
    vivo_category: z.string().default('IM'),
    meizu_notice_msg_type: z.union([z.literal(0), z.literal(1)]).default(1),
    xiaomi_channel_id: z.string().default(''),
    huawei_channel_id: z.string().default(''),
    oppo_channel_id: z.string().default(''),
    google_channel_id: z.string().default(''),
  }).default(() => ({ huawei_category: 'IM', huawei_importance: 'NORMAL' as const, honor_importance: 'NORMAL' as const, oppo_category: 'IM', vivo_classification: 1 as const, vivo_category: 'IM', meizu_notice_msg_type: 1 as const, xiaomi_channel_id: '', huawei_channel_id: '', oppo_channel_id: '', google_channel_id: '' })),
});
export type OfflinePushConfig = z.infer<typeof offlinePush>;

/**
 * The tencent_push channel: TIMPush `v4/timpush/batch`, a phone notification that is not an IM message. Same
 * endpoint, app and admin UserSig as tencent_im; its own quota, queue, retries and dead letter.
 */
const tencentPush = z.strictObject({
  enabled: z.boolean().default(false),
  kinds: kindList.default(() => ['activity_notice', 'vip_notice']),
  /** Calls per second for the whole app (Tencent documents 10-40 by edition); shared by every deliver process. */
  rate_limit_per_second: z.number().int().min(0).default(30),
  request_timeout: durationMs.default(3000),
  /**
   * Resend a push whose request may have reached Tencent (timeout or reset after the body was written)? Tencent
   * dedups MsgRandom only within one second, so a resend may show twice on the phone. false: record it as
   * `delivered_unconfirmed` and stop.
   */
  retry_ambiguous: z.boolean().default(false),
  /** Accounts per call when identical pushes are batched (Tencent allows 1-500). */
  batch_max_accounts: z.number().int().min(1).max(500).default(500),
  /** How long a push waits for identical ones to share its call when no send slot is waiting anyway. */
  batch_linger: durationMs.default(20),
  /** Concurrent push deliveries per deliver process: the most rows one batch can gather there. */
  concurrency: z.number().int().min(1).max(2000).default(500),
});

/** The site inbox channel: notice-service's own notice_inbox_items, read by the gateway over gRPC. */
const inbox = z.strictObject({
  enabled: z.boolean().default(true),
  /** The notice kinds that land in the inbox (balance updates do not by default: they are state, not news). */
  kinds: kindList.default(() => [...DEFAULT_INBOX_KINDS]),
  /** How long an item is kept, per notice kind; `default` for kinds not listed. 0 keeps it until the cap pushes it out. */
  retention: z.record(z.string(), durationMs).default(() => ({ default: 90 * 24 * 3600 * 1000 })),
  /** The newest this many items of a user are kept; older ones are swept. */
  max_items_per_user: z.number().int().min(1).max(100_000).default(1000),
  /** How often the sweeper runs (retention, then the cap of users written since its last run). */
  sweep_interval: durationMs.default(10_000),
  /** Rows deleted per sweep statement, so a sweep never holds long locks. */
  sweep_batch_size: z.number().int().min(1).max(100_000).default(1000),
  /** Concurrent inbox deliveries per deliver process; they are batched into one INSERT. */
  concurrency: z.number().int().min(1).max(1000).default(16),
  /** Unread counts stop at this number and say `capped` (a badge shows "99+"). */
  unread_count_cap: z.number().int().min(1).max(10_000).default(100),
  /**
   * Signs page tokens so that a forged or altered one is refused. Required when the API listens beyond loopback;
   * an empty key (development only) still detects damaged tokens.
   */
  page_token_secret: z.string().default(''),
  /** Serve notice.inbox.v1.InboxService on its own listener (roles `inbox-api` and `all`). */
  api_enabled: z.boolean().default(true),
  /** The API's own address: loopback by default; anything else requires api_tls (mutual TLS with the gateway). */
  api_host: z.string().min(1).default('127.0.0.1'),
  api_port: port.default(13010),
  /** Mutual TLS: the server's certificate and key, and the CA that the gateway's client certificate must chain to. */
  api_tls: z.strictObject({ cert_file: z.string().min(1), key_file: z.string().min(1), client_ca_file: z.string().min(1) }).optional(),
  /** The API's own MySQL connections, so a flood of calls cannot take the deliver role's. */
  api_pool_size: z.number().int().min(1).max(100).default(4),
  /** Calls waiting for one of those connections; beyond it a call is answered RESOURCE_EXHAUSTED at once. */
  api_queue_limit: z.number().int().min(1).max(10_000).default(256),
  /** Deadline of each API query; a slower one fails the call UNAVAILABLE and frees its connection. */
  api_query_timeout: durationMs.default(2000),
  /** Concurrent calls per gateway connection (HTTP/2 streams). */
  api_max_concurrent_streams: z.number().int().min(1).max(10_000).default(100),
});

/** RocketMQ 5 proxy (gRPC) consumer settings. Defaults are values the real proxy accepts. */
const rocketmq = z.strictObject({
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
  room_outbox: z
    .strictObject({
      enabled: z.boolean().default(false),
      topic: z.string().min(1).default('hyapp_room_outbox'),
      consumer_group: z.string().regex(/^[%A-Za-z0-9_-]{1,255}$/, 'letters, digits, _ - % only').default('hyapp-notice-room-outbox'),
      /** Deliveries after which a message that still fails is recorded as rejected and acked. */
      consumer_max_reconsume_times: z.number().int().min(1).max(1000).default(16),
      receive_batch_size: z.number().int().min(1).max(32).default(16),
      /** How long a received message stays hidden; the real proxy rejects < 10s. Also the redelivery delay. */
      invisible_duration: durationMs.default(30_000),
      /** Long-poll wait per receive; the real proxy caps it at 20s. */
      await_duration: durationMs.default(20_000),
    })
    .default(() => ({ enabled: false, topic: 'hyapp_room_outbox', consumer_group: 'hyapp-notice-room-outbox', consumer_max_reconsume_times: 16, receive_batch_size: 16, invisible_duration: 30_000, await_duration: 20_000 })),
});

/** Operator dashboard: bull-board plus the ledger search/requeue page, behind basic auth. */
const dashboard = z.strictObject({
  port: port.default(13200),
  /** Address the dashboard listens on: loopback unless a deployment (compose, a pod behind a proxy) opens it. */
  host: z.string().min(1).default('127.0.0.1'),
  base_path: z.string().regex(/^\/[A-Za-z0-9_\-/]*[A-Za-z0-9_\-]$/, 'must look like "/admin"').default('/admin'),
  environment: z.strictObject({ label: z.string().min(1).default('local'), color: z.string().default('#2e7d32') }).default(() => ({ label: 'local', color: '#2e7d32' })),
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

/** Event types whose notices carry a version (a newer one makes an older one obsolete): the only ones skip_superseded may turn on. */
export const SUPERSEDABLE_EVENT_TYPES = ['WalletBalanceChanged'] as const;

const DEFAULT_PRIORITY = { room_notice: 60_000, vip_notice: 20_000, activity_notice: 20_000, wallet_notice: 0 };
const DEFAULT_SKIP_SUPERSEDED = { WalletBalanceChanged: true };

/**
 * Quota order by notice kind: a notice queues for Tencent's quota as if committed this much earlier, so a kick goes
 * before balance updates up to a minute older, and a lower kind is never more than the difference behind (it is not
 * starved: once that much older, it goes first). A kind listed here also gets a BullMQ queue of its own, so it is
 * fetched without waiting behind other kinds' backlog; unlisted kinds share one queue with lead 0. `{}` is plain
 * commit-time order in one queue. Every process must run with the same map.
 */
const priority = z
  .record(z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, 'a notice kind such as "room_notice"'), durationMs)
  .default(() => ({ ...DEFAULT_PRIORITY }));

/**
 * Per event type: finish a notice without sending it (status superseded) when, at its turn to send, the ledger
 * already holds a newer version of it (sent or on its way). Unlisted types keep their default (on for
 * WalletBalanceChanged).
 */
const skipSuperseded = z
  .record(z.string(), z.boolean())
  .default(() => ({}))
  .transform((given, ctx) => {
    const merged: Record<string, boolean> = { ...DEFAULT_SKIP_SUPERSEDED, ...given };
    for (const [type, on] of Object.entries(merged)) {
      if (on && !(SUPERSEDABLE_EVENT_TYPES as readonly string[]).includes(type)) {
        ctx.addIssue({ code: 'custom', path: [type], message: `${type} notices carry no version, so none can supersede another; only ${SUPERSEDABLE_EVENT_TYPES.join(', ')} can be skipped` });
      }
    }
    return merged;
  });

export const configSchema = z.strictObject({
  mysql: z.strictObject({
    url: z.string().regex(/^mysql:\/\//, 'must be a mysql:// URL'),
    pool_size: z.number().int().min(1).max(200).default(10),
  }),
  wallet_database: mysqlIdentifier.default('hyapp_wallet'),
  room_database: mysqlIdentifier.default('hyapp_room'),
  activity_database: mysqlIdentifier.default('hyapp_activity'),
  /** The owner's own server for its outbox (a read-only user); default: mysql.url's server. */
  wallet_mysql_url: ownerUrl.optional(),
  room_mysql_url: ownerUrl.optional(),
  activity_mysql_url: ownerUrl.optional(),
  /** An outbox split over several servers or databases: each shard its own cursor and gap tracker, one source name. */
  wallet_shards: ownerShards,
  room_shards: ownerShards,
  activity_shards: ownerShards,
  redis: z.strictObject({
    url: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL'),
    // A hash tag keeps every key of a queue in one Redis Cluster slot.
    prefix: z.string().regex(/^\{[^{}]+\}$/, 'must be a Redis Cluster hash tag such as "{notice}"').default('{notice}'),
    /** Connect as a Redis Cluster client, with `url` as the seed node. */
    cluster: z.boolean().default(false),
  }),
  tencent_im: tencentIm.default(() => tencentIm.parse({})),
  inbox: inbox.default(() => inbox.parse({})),
  tencent_push: tencentPush.default(() => tencentPush.parse({})),
  offline_push: offlinePush.default(() => offlinePush.parse({})),
  /**
   * Per event type, the channels its notices go to, instead of what the channels' `kinds` say (for example
   * `SystemNotice: [inbox]`). Unlisted types follow the kinds.
   */
  channel_overrides: z.record(z.string().min(1), z.array(z.string())).default(() => ({})),
  wallet_notice_worker: outboxWorker.default(() => outboxWorker.parse({})),
  room_notice_worker: outboxWorker.default(() => outboxWorker.parse({})),
  activity_notice_worker: outboxWorker.default(() => outboxWorker.parse({})),
  rocketmq: rocketmq.default(() => rocketmq.parse({})),
  deliver: z
    .strictObject({
      enabled: z.boolean().default(true),
      concurrency: z.number().int().min(1).max(1000).default(32),
      /** First retry delay; later ones grow exponentially with jitter. */
      retry_base_delay: durationMs.default(1000),
      retry_max_delay: durationMs.default(300_000),
      /** BullMQ job lock; a job whose worker died is noticed as stalled after about this long. */
      job_lock_duration: durationMs.default(30_000),
      /** Sends that start but never finish (the worker dies each time) before the event is failed as poison. */
      max_unfinished_attempts: z.number().int().min(1).max(100).default(3),
      priority,
      skip_superseded: skipSuperseded,
    })
    .default(() => ({ enabled: true, concurrency: 32, retry_base_delay: 1000, retry_max_delay: 300_000, job_lock_duration: 30_000, max_unfinished_attempts: 3, priority: { ...DEFAULT_PRIORITY }, skip_superseded: { ...DEFAULT_SKIP_SUPERSEDED } })),
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
      purge_batch_size: z.number().int().min(1).max(100_000).default(1000),
    })
    .default(() => ({ delivered: 30 * 24 * 3600 * 1000, failed: 0, rejected: 30 * 24 * 3600 * 1000, purge_batch_size: 1000 })),
  dashboard: dashboard.default(() => dashboard.parse({})),
  health: z
    // An orchestrator probes from outside the process's host: all interfaces by default; the answers hold no secrets.
    .strictObject({ host: z.string().min(1).default('0.0.0.0'), grpc_port: port.default(13009), http_port: port.default(13109) })
    .default(() => ({ host: '0.0.0.0', grpc_port: 13009, http_port: 13109 })),
  log: z
    .strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') })
    .default(() => ({ level: 'info' as const })),
  shutdown_timeout: durationMs.default(10_000),
});

export type NoticeConfig = z.infer<typeof configSchema>;

/** The kinds with a queue of their own, highest lead first (the order their queues are filled and listed). */
export function prioritisedKinds(config: NoticeConfig): string[] {
  return Object.entries(config.deliver.priority).sort((a, b) => b[1] - a[1]).map(([kind]) => kind);
}
export type InboxConfig = z.infer<typeof inbox>;
export type OutboxWorkerConfig = z.infer<typeof outboxWorker>;
export type RocketMqConfig = z.infer<typeof rocketmq>;

/** Limits of the real RocketMQ 5 proxy (ReceiveMessageActivity / ProxyConfig). */
export const PROXY_MIN_INVISIBLE_MS = 10_000;
export const PROXY_MAX_AWAIT_MS = 20_000;
