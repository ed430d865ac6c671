import type { NoticeConfig } from '../config/schema.ts';
import { channelKinds, channelNames } from './channel-set.ts';

import type { ChannelRoutes } from './types.ts';

/** Which channels a fact of this type and kind goes to, in the registry's order; none means it is not delivered. */
export type { ChannelRoutes };

export interface RoutingTable {
  /** Channel → the kinds it takes (`*` for every kind). */
  kinds: ReadonlyMap<string, readonly string[]>;
  /** Event type → its channels, overriding the kinds. */
  overrides: Readonly<Record<string, readonly string[]>>;
}

/** The routing decision, pure: an event type's override wins, else every channel whose kinds include the kind. */
export function routeFact(table: RoutingTable, eventType: string, noticeKind: string): readonly string[] {
  const override = Object.hasOwn(table.overrides, eventType) ? table.overrides[eventType] : undefined;
  if (override) return override;
  const routed: string[] = [];
  for (const [channel, kinds] of table.kinds) if (kinds.includes('*') || kinds.includes(noticeKind)) routed.push(channel);
  return routed;
}

export function routingTable(config: NoticeConfig): RoutingTable {
  return { kinds: channelKinds(config), overrides: config.channel_overrides };
}

export function channelRoutes(config: NoticeConfig): ChannelRoutes {
  const table = routingTable(config);
  const memo = new Map<string, readonly string[]>();
  const routes = (eventType: string, noticeKind: string) => {
    const key = `${eventType}\u0000${noticeKind}`;
    let routed = memo.get(key);
    if (!routed) memo.set(key, (routed = routeFact(table, eventType, noticeKind)));
    return routed;
  };
  return Object.assign(routes, { fallback: routedChannels(config)[0] ?? channelNames(config)[0] });
}

/** Config mistakes in the routing: an override naming a channel that does not exist. */
export function routingProblems(config: NoticeConfig): string[] {
  const problems: string[] = [];
  const names = channelNames(config);
  for (const [eventType, channels] of Object.entries(config.channel_overrides)) {
    for (const channel of channels) {
      if (!names.includes(channel)) problems.push(`channel_overrides.${eventType}: unknown channel "${channel}" (channels: ${names.join(', ')})`);
    }
  }
  for (const channel of Object.keys(config.quiet_hours.policy))
    if (!names.includes(channel)) problems.push(`quiet_hours.policy: unknown channel "${channel}" (channels: ${names.join(', ')})`);
  return problems;
}

/** Every channel some kind or override routes to: the channels whose queues exist and whose senders must. */
export function routedChannels(config: NoticeConfig): string[] {
  const table = routingTable(config);
  const used = new Set<string>();
  for (const [channel, kinds] of table.kinds) if (kinds.length > 0) used.add(channel);
  for (const channels of Object.values(table.overrides)) for (const c of channels) used.add(c);
  return channelNames(config).filter((c) => used.has(c));
}
