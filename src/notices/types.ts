import type { z } from 'zod';
import type { Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import type { KindDefaults, NoticeConfig } from '../config/schema.ts';
import type { OutboxSource, ParsedMessage } from '../facts/types.ts';

export type { MappedEvent, OutboxRow, ParsedMessage, SourceIdentity } from '../facts/types.ts';

/** Demo traffic of one source: plays its owner service (dev and compose only). */
export interface SourceDemo {
  /** `demo --<flag>` turns it on; without one it always runs (the stream `--rate` counts). */
  flag?: { name: string; description: string };
  /** Further flags it reads (`--publish-kicks`). */
  options?: ReadonlyArray<{ name: string; description: string }>;
  /** Its rows per tick, as a share of `--rate`. */
  share: number;
  open(ctx: DemoContext): Promise<DemoWriter>;
}

export interface DemoContext {
  config: NoticeConfig;
  pool: Pool;
  /** Where its outbox is (its `<key>_database`). */
  database: string;
  logger: Logger;
  /** The demo flags given (names without `--`). */
  flags: ReadonlySet<string>;
}

export interface DemoWriter {
  write(count: number): Promise<number>;
  close?(): Promise<void>;
}

/**
 * One outbox-fed source's module: its table, config keys, kinds, mapping, optional MQ entry, reference DDL and demo
 * writer. A new source is its folder under src/notices/ and one line in notices/registry.ts.
 */
export interface SourceModule<Shape extends z.ZodRawShape = z.ZodRawShape, MqShape extends z.ZodRawShape = z.ZodRawShape> {
  /** Its config prefix: `wallet` → wallet_database, wallet_mysql_url, wallet_shards, wallet_notice_worker. */
  key: string;
  /** `source_name` in the ledger, its cursor and metrics (`wallet_outbox`). */
  sourceName: string;
  /** The service that owns (and writes) the outbox. */
  owner: string;
  table: string;
  /** Its keys (outboxSourceShape), composed into the config. */
  configShape: Shape;
  /** The notice kinds its facts become: its poller's backpressure counts only those kinds' queues. */
  noticeKinds: readonly string[];
  /** The outbox as the poller reads it, in one database. */
  outbox(database: string, config: NoticeConfig): OutboxSource;
  /** Reference DDL of the owner's outbox, for `migrate --owner-fixtures` (development and tests only). */
  ownerDdl(quotedDatabase: string): string[];
  /** Its subscription keys under `rocketmq` (rocketmq.room_outbox), when it also arrives over MQ. */
  mqShape?: MqShape;
  mq?: { configKey: string; parse(body: Buffer, recordedAtMs: number, config: NoticeConfig): ParsedMessage };
  demo?: SourceDemo;
  /** Defaults of the core's per-kind settings for its kinds and event types (the operator's config overrides them). */
  kindDefaults?: Partial<KindDefaults>;
}
