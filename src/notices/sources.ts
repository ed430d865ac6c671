import { revocationOf } from './revocation-fact.ts';
import type { OutboxRow } from './types.ts';
import type { NoticeConfig, MqSubscriptionConfig, OutboxWorkerConfig, OwnerShardConfig } from '../config/schema.ts';
import { modulesOf, settingsOf } from '../modules/module-set.ts';
import type { OutboxSource } from '../outbox/source.ts';
import type { ParsedMessage } from '../rocketmq/consumer-loop.ts';
import type { SourceModule } from './types.ts';

/** What the processes loop over: the sources of this config's modules. */
export function sourceModules(config: NoticeConfig): readonly SourceModule[] {
  return modulesOf(config).sources;
}

/** A source's keys as the config holds them (`<key>_database`, `<key>_mysql_url`, `<key>_shards`, `<key>_notice_worker`). */
export function sourceSettings(
  config: NoticeConfig,
  module: SourceModule,
): { database: string; mysqlUrl: string | undefined; shards: readonly OwnerShardConfig[]; worker: OutboxWorkerConfig; workerKey: string } {
  return {
    database: settingsOf<string>(config, `${module.key}_database`),
    mysqlUrl: settingsOf<string | undefined>(config, `${module.key}_mysql_url`),
    shards: settingsOf<OwnerShardConfig[]>(config, `${module.key}_shards`),
    worker: settingsOf<OutboxWorkerConfig>(config, `${module.key}_notice_worker`),
    workerKey: `${module.key}_notice_worker`,
  };
}

/** An outbox-fed source as ingest runs it. */
export interface OutboxNoticeModule {
  module: SourceModule;
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
  return sourceModules(config).map((module) => {
    const s = sourceSettings(config, module);
    const url = s.mysqlUrl ?? config.mysql.url;
    const shards: OwnerShard[] =
      s.shards.length > 0
        ? s.shards.map((shard) => ({ name: shard.name, mysqlUrl: shard.mysql_url ?? url, database: shard.database }))
        : [{ name: null, mysqlUrl: url, database: s.database }];
    const source = module.outbox(s.database, config);
    // Every outbox can carry NoticeRevoked facts, whatever its module maps.
    const withRevocations = { ...source, map: (row: OutboxRow, at: number) => revocationOf(row.event_type, row.payload) ?? source.map(row, at) };
    return { module, source: withRevocations, worker: s.worker, workerKey: s.workerKey, noticeKinds: module.noticeKinds, shards };
  });
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
  const policies = new Map(
    outboxNoticeModules(config).map((m) => [m.source.sourceName, { lockTtlMs: m.worker.lock_ttl, maxRetryCount: m.worker.max_retry_count }]),
  );
  const fallback: SourcePolicy = { lockTtlMs: 30_000, maxRetryCount: 10 };
  return (sourceName) => policies.get(sourceName) ?? fallback;
}

/** MQ-fed notice modules: a topic subscription whose messages map to the same ledger facts as an outbox source. */
export interface MqNoticeModule {
  sourceName: string;
  subscription: MqSubscriptionConfig;
  configKey: string;
  parse: (body: Buffer, recordedAtMs: number) => ParsedMessage;
  maxRetryCount: number;
}

export function mqNoticeModules(config: NoticeConfig): MqNoticeModule[] {
  return sourceModules(config).flatMap((module) => {
    const mq = module.mq;
    if (!mq) return [];
    return [
      {
        sourceName: module.sourceName,
        subscription: settingsOf<MqSubscriptionConfig>(config.rocketmq, mq.configKey),
        configKey: `rocketmq.${mq.configKey}`,
        parse: (body: Buffer, recordedAtMs: number) => mq.parse(body, recordedAtMs, config),
        maxRetryCount: sourceSettings(config, module).worker.max_retry_count,
      },
    ];
  });
}

/** Whether the config enables any ingest entry (an outbox poller or an MQ subscription). */
export function ingestEnabled(config: NoticeConfig): boolean {
  return outboxNoticeModules(config).some((m) => m.worker.enabled) || (config.rocketmq.enabled && mqNoticeModules(config).some((m) => m.subscription.enabled));
}

/** The keys that turn ingest on, for the error that says none is. */
export function ingestSwitches(config: NoticeConfig): string[] {
  return [
    ...sourceModules(config).map((m) => `${m.key}_notice_worker.enabled`),
    ...sourceModules(config).flatMap((m) => (m.mq ? [`rocketmq.enabled with rocketmq.${m.mq.configKey}.enabled`] : [])),
  ];
}
