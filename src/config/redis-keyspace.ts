import type { NoticeConfig } from './schema.ts';

/**
 * The hash tag of one app's Redis keys: `{notice}` and `lalu` make `{notice:lalu}`. Redis Cluster places every key
 * of one tag in one slot, so each app's queues, pacers, cap windows, live channels and read-sync set sit together
 * (BullMQ's scripts need a queue's keys in one slot) while different apps land on different slots and masters.
 */
export function appRedisPrefix(prefix: string, appCode: string): string {
  return `${prefix.slice(0, -1)}:${appCode}}`;
}

/**
 * Where an app_code's keys live: an app of `tencent_im.apps` under its own tag; the single-app shorthand
 * (`tencent_im.app_code`) and any app this deployment does not serve under the deployment's prefix, as in every
 * earlier release, so a single-app deployment's keys do not move.
 */
export function redisPrefixOf(config: Pick<NoticeConfig, 'redis' | 'tencent_im'>): (appCode: string) => string {
  const own = new Set(Object.keys(config.tencent_im.apps));
  const prefix = config.redis.prefix;
  return (appCode) => (own.has(appCode) ? appRedisPrefix(prefix, appCode) : prefix);
}

/** Every prefix this deployment's keys live under: the deployment's own first, then one per app of its own. */
export function redisPrefixes(config: Pick<NoticeConfig, 'redis' | 'tencent_im'>): string[] {
  return [config.redis.prefix, ...Object.keys(config.tencent_im.apps).map((app) => appRedisPrefix(config.redis.prefix, app))];
}
