import type { NoticeConfig } from '../config/schema.ts';
import { modulesOf } from '../modules/module-set.ts';
import { appsWithOwnTag } from '../config/redis-keyspace.ts';
import type { ChannelModule } from './types.ts';

/** The channels of this config's modules, in registry order (the order of routing, queues and pages). */
export function channelModules(config: NoticeConfig): readonly ChannelModule[] {
  return modulesOf(config).channels;
}

export function channelNames(config: NoticeConfig): string[] {
  return channelModules(config).map((m) => m.name);
}

export function channelModule(config: NoticeConfig, name: string): ChannelModule | undefined {
  return channelModules(config).find((m) => m.name === name);
}

/** Channel → the kinds it takes, for routing. */
export function channelKinds(config: NoticeConfig): Map<string, readonly string[]> {
  return new Map(channelModules(config).map((m) => [m.name, m.kinds(config)]));
}

/** The queues of every registered channel (a channel no kind routes to still has its queue, so its rows can drain). */
export function channelQueueSpecs(config: NoticeConfig): Array<{ channel: string; ownQueueKinds: readonly string[]; apps: readonly string[] }> {
  // Each app with a hash tag of its own has queues of its own, so its backlog never stands before another app's notices.
  const apps = appsWithOwnTag(config);
  return channelModules(config).map((m) => ({ channel: m.name, ownQueueKinds: m.ownQueueKinds(config), apps }));
}

/** Roles channels serve beyond delivery (the inbox API), by name. */
export function channelRoles(config: NoticeConfig) {
  return channelModules(config).flatMap((m) => m.roles ?? []);
}
