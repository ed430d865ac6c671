import type { NoticeConfig, OutboxWorkerConfig, OwnerShardConfig } from '../config/schema.ts';
import type { OutboxSource } from '../outbox/source.ts';
import { walletOutboxSource } from './wallet/source.ts';
import { roomOutboxSource } from './room/source.ts';
import { ROOM_NOTICE, ROOM_SOURCE_NAME } from './room/mapping.ts';
import { VIP_NOTICE, WALLET_NOTICE } from './wallet/mapping.ts';
import { activityOutboxSource } from './activity/source.ts';
import { ACTIVITY_NOTICE } from './activity/mapping.ts';
import { parseRoomMqMessage } from './room/mq-message.ts';
import type { ParsedMessage } from '../rocketmq/consumer-loop.ts';

/**
 * Every outbox-fed notice module, in one list. A new notice type is a new folder under src/notices/ and one
 * line here; the cursor, the ledger and the worker do not change.
 */
export interface OutboxNoticeModule {
  source: OutboxSource;
  worker: OutboxWorkerConfig;
  workerKey: string;
  /** The notice kinds its facts become: its poller's backpressure counts only those kinds' queues. */
  noticeKinds: readonly string[];
  /** Where its outbox is: one place, or each shard (one poller, cursor and gap tracker each). */
  shards: readonly OwnerShard[];
}

/** One place an outbox is read from. `name` is null for an unsharded source (its cursor keeps the source name). */
export interface OwnerShard {
  name: string | null;
  mysqlUrl: string;
  database: string;
}

export function outboxNoticeModules(config: NoticeConfig): OutboxNoticeModule[] {
  const language = config.offline_push.language_field;
  const shardsOf = (database: string, url: string | undefined, shards: readonly OwnerShardConfig[]): OwnerShard[] =>
    shards.length > 0
      ? shards.map((s) => ({ name: s.name, mysqlUrl: s.mysql_url ?? url ?? config.mysql.url, database: s.database }))
      : [{ name: null, mysqlUrl: url ?? config.mysql.url, database }];
  return [
    { source: walletOutboxSource(config.wallet_database, language), worker: config.wallet_notice_worker, workerKey: 'wallet_notice_worker', noticeKinds: [WALLET_NOTICE, VIP_NOTICE], shards: shardsOf(config.wallet_database, config.wallet_mysql_url, config.wallet_shards) },
    { source: roomOutboxSource(config.room_database, language), worker: config.room_notice_worker, workerKey: 'room_notice_worker', noticeKinds: [ROOM_NOTICE], shards: shardsOf(config.room_database, config.room_mysql_url, config.room_shards) },
    { source: activityOutboxSource(config.activity_database, language), worker: config.activity_notice_worker, workerKey: 'activity_notice_worker', noticeKinds: [ACTIVITY_NOTICE], shards: shardsOf(config.activity_database, config.activity_mysql_url, config.activity_shards) },
  ];
}

export interface SourcePolicy {
  lockTtlMs: number;
  maxRetryCount: number;
}

/**
 * Per-source delivery policy (lock TTL, retry budget) by the ledger's source_name. A source no module knows (a
 * row left by a removed module) gets the seed's defaults.
 */
export function sourcePolicy(config: NoticeConfig): (sourceName: string) => SourcePolicy {
  const policies = new Map(outboxNoticeModules(config).map((m) => [m.source.sourceName, { lockTtlMs: m.worker.lock_ttl, maxRetryCount: m.worker.max_retry_count }]));
  const fallback: SourcePolicy = { lockTtlMs: 30_000, maxRetryCount: 10 };
  return (sourceName) => policies.get(sourceName) ?? fallback;
}

/** MQ-fed notice modules: a topic subscription whose messages map to the same ledger facts as an outbox source. */
export interface MqNoticeModule {
  sourceName: string;
  subscription: NoticeConfig['rocketmq']['room_outbox'];
  configKey: string;
  parse: (body: Buffer, recordedAtMs: number) => ParsedMessage;
  maxRetryCount: number;
}

export function mqNoticeModules(config: NoticeConfig): MqNoticeModule[] {
  return [
    { sourceName: ROOM_SOURCE_NAME, subscription: config.rocketmq.room_outbox, configKey: 'rocketmq.room_outbox', parse: (body, recordedAtMs) => parseRoomMqMessage(body, recordedAtMs, config.offline_push.language_field), maxRetryCount: config.room_notice_worker.max_retry_count },
  ];
}

/** Whether the config enables any ingest entry (an outbox poller or an MQ subscription). */
export function ingestEnabled(config: NoticeConfig): boolean {
  return outboxNoticeModules(config).some((m) => m.worker.enabled) || (config.rocketmq.enabled && mqNoticeModules(config).some((m) => m.subscription.enabled));
}
