import type { Pool } from 'mysql2/promise';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { NoticeConfig } from '../config/schema.ts';
import type { LedgerRow } from '../ledger/types.ts';
import type { NoticeMetrics } from '../observability/metrics.ts';

/**
 * What one send over a channel came to. Expected outcomes are values; only programming errors throw, and an
 * infrastructure error (MySQL, Redis) thrown from a send makes the job wait without spending an attempt.
 */
export type ChannelOutcome =
  | { kind: 'delivered'; /** The provider's reference (Tencent MsgKey, inbox item id), kept in the ledger. */ ref: string; latencyMs: number }
  /** The request may have reached the provider and the channel's policy is not to resend it (a resend may show twice). */
  | { kind: 'unconfirmed'; ref: string; code: string; message: string; latencyMs: number }
  | { kind: 'retry'; code: string; message: string; latencyMs: number }
  | { kind: 'permanent'; code: string; message: string; latencyMs: number }
  /** The provider's app-wide limit answered: give the claim back unspent; the channel slows every sender. */
  | { kind: 'rate_limited'; code: string; message: string; latencyMs: number }
  /** Not sent at all: a newer version of the same notice is sent or on its way. */
  | { kind: 'superseded'; newerEventId: string }
  /** Not sent at all: no send slot within the ledger lock; claim again at `retryAtMs`, unspent. */
  | { kind: 'not_now'; code: string; message: string; retryAtMs: number };

export interface SendContext {
  /** When the claim's ledger lock ends (null: no lock); a send must end before it. */
  lockUntilMs: number | null;
}

/**
 * A delivery channel: Tencent IM C2C, the site inbox, phone push. It owns how a claimed ledger row is sent
 * (pacing, provider dedup, what is obsolete); the delivery core owns claim, record and retry around it.
 */
export interface DeliveryChannel {
  readonly name: string;
  send(row: LedgerRow, ctx: SendContext): Promise<ChannelOutcome>;
  /** After a rate_limited answer for this row: slow every sender of its app down; returns the new pace (1 = full rate). */
  onRateLimited?(row: LedgerRow): Promise<number>;
  /** Periodic upkeep owned by the channel (retention, caps); run by one process at a time. */
  maintain?(nowMs: number): Promise<Record<string, number>>;
  /** How often maintain runs. */
  maintainEveryMs?: number;
  close?(): Promise<void> | void;
}

/** Which channels a fact of this type and kind goes to (the routing decision, made outside any channel). */
export type ChannelRoutes = (eventType: string, noticeKind: string) => readonly string[];

/** What a channel is built from in a deliver process; everything it needs to know of others is passed in here. */
export interface ChannelContext {
  config: NoticeConfig;
  pool: Pool;
  redis: Redis;
  /** The newer version of a supersedable notice in the ledger (BatchedLedger.newerVersion). */
  newerVersion(row: LedgerRow): Promise<string | null>;
  /** Where facts are routed (channels/routing.ts), so a channel can tell whether another also carries a notice. */
  routes: ChannelRoutes;
  logger: Logger;
  metrics?: NoticeMetrics;
}
