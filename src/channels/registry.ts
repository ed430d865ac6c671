import type { Pool } from 'mysql2/promise';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { prioritisedKinds, type NoticeConfig } from '../config/schema.ts';
import { CHANNEL_INBOX, CHANNEL_TENCENT_IM_C2C, CHANNEL_TENCENT_PUSH, type LedgerRow } from '../ledger/types.ts';
import { templateFor } from '../tencent-im/offline-push.ts';
import type { NoticeMetrics } from '../observability/metrics.ts';
import type { ChannelContext, DeliveryChannel } from './types.ts';

export type { ChannelContext } from './types.ts';

/** One delivery channel's module: its config, its queues, and how its sender is built. */
export interface ChannelModule {
  name: string;
  /** The YAML block that configures it. */
  configKey: string;
  /** What its queues carry, for operators (the dashboard's queue description). */
  description: string;
  /** The notice kinds it takes (`*` = every kind; empty = unused). */
  kinds(config: NoticeConfig): readonly string[];
  /** Kinds with a BullMQ queue of their own in this channel (the rest share one). */
  ownQueueKinds(config: NoticeConfig): readonly string[];
  /** Concurrent deliveries per deliver process. */
  concurrency(config: NoticeConfig): number;
  /** Why this config gives the channel no sender (so routed notices would never go), or null. */
  senderProblem(config: NoticeConfig): string | null;
  create(ctx: ChannelContext): Promise<DeliveryChannel>;
}

/**
 * Every delivery channel, in one list. A new channel is a folder under src/channels/ and one line here (plus its
 * YAML block); sources, the cursor, the ledger and the reconciler do not change.
 */
export const CHANNEL_MODULES: readonly ChannelModule[] = [
  {
    name: CHANNEL_TENCENT_IM_C2C,
    configKey: 'tencent_im',
    description: 'Tencent IM C2C messages',
    kinds: (config) => config.tencent_im.kinds,
    ownQueueKinds: (config) => prioritisedKinds(config),
    concurrency: (config) => config.deliver.concurrency,
    senderProblem: (config) => (config.tencent_im.enabled ? null : 'tencent_im.enabled is false, so every notice would be dropped. Enable it (or point tencent_im.base_url at fake-im), or route no kinds to it (tencent_im.kinds: [])'),
    create: async (ctx) => (await import('./tencent-im-c2c/create.ts')).createTencentImC2C(ctx),
  },
  {
    name: CHANNEL_INBOX,
    configKey: 'inbox',
    description: 'Site inbox entries (MySQL)',
    kinds: (config) => (config.inbox.enabled ? config.inbox.kinds : []),
    ownQueueKinds: () => [],
    concurrency: (config) => config.inbox.concurrency,
    senderProblem: () => null,
    create: async (ctx) => (await import('./inbox/channel.ts')).inboxChannel(ctx),
  },
  {
    name: CHANNEL_TENCENT_PUSH,
    configKey: 'tencent_push',
    description: 'Phone pushes (Tencent TIMPush batch)',
    kinds: (config) => (config.tencent_push.enabled ? config.tencent_push.kinds : []),
    ownQueueKinds: () => [],
    concurrency: (config) => config.tencent_push.concurrency,
    senderProblem: (config) => {
      if (!config.tencent_im.enabled) return 'tencent_push needs tencent_im (its endpoint, app and admin key): set tencent_im.enabled, or turn tencent_push off';
      // A kind with no template would fail every push; say so at start-up instead.
      const untemplated = config.tencent_push.kinds.filter((k) => k !== '*' && !templateFor(config.offline_push, '', k, {}));
      return untemplated.length > 0 ? `tencent_push routes ${untemplated.join(', ')} but offline_push.templates has no entry for it` : null;
    },
    create: async (ctx) => (await import('./tencent-push/create.ts')).createTencentPush(ctx),
  },
];

export const CHANNEL_NAMES: readonly string[] = CHANNEL_MODULES.map((m) => m.name);

export function channelModule(name: string): ChannelModule | undefined {
  return CHANNEL_MODULES.find((m) => m.name === name);
}

/** Channel → the kinds it takes, for routing. */
export function channelKinds(config: NoticeConfig): Map<string, readonly string[]> {
  return new Map(CHANNEL_MODULES.map((m) => [m.name, m.kinds(config)]));
}

/** The queues of every registered channel (a channel no kind routes to still has its queue, so its rows can drain). */
export function channelQueueSpecs(config: NoticeConfig): Array<{ channel: string; ownQueueKinds: readonly string[]; apps: readonly string[] }> {
  // Each app of tencent_im.apps has queues of its own, so its backlog never stands before another app's notices.
  const apps = Object.keys(config.tencent_im.apps);
  return CHANNEL_MODULES.map((m) => ({ channel: m.name, ownQueueKinds: m.ownQueueKinds(config), apps }));
}
