import type { NoticeConfig } from './schema.ts';

type Keyspace = Pick<NoticeConfig, 'redis' | 'apps'>;

/**
 * The hash tag of one app's Redis keys: `{notice}` and `lalu` make `{notice:lalu}`. Redis Cluster places every key
 * of one tag in one slot, so each app's queues, pacers, cap windows, live channels and read-sync set sit together
 * (BullMQ's scripts need a queue's keys in one slot) while different apps land on different slots and masters.
 */
export function appRedisPrefix(prefix: string, appCode: string): string {
  return `${prefix.slice(0, -1)}:${appCode}}`;
}

/** The apps whose keys (and queues) have a hash tag of their own: every app of `apps` but a `redis_tag: deployment` one. */
export function appsWithOwnTag(config: Keyspace): string[] {
  return Object.entries(config.apps)
    .filter(([, app]) => app.redis_tag === 'own')
    .map(([appCode]) => appCode);
}

/**
 * Where an app_code's keys live: an app with its own tag under it; a `redis_tag: deployment` app (the single app of a
 * deployment from before the apps list) and any app this deployment does not serve under the deployment's prefix, as
 * in every earlier release, so their keys do not move.
 */
export function redisPrefixOf(config: Keyspace): (appCode: string) => string {
  const own = new Set(appsWithOwnTag(config));
  const prefix = config.redis.prefix;
  return (appCode) => (own.has(appCode) ? appRedisPrefix(prefix, appCode) : prefix);
}

/** Every prefix this deployment's keys live under: the deployment's own first, then one per app of its own. */
export function redisPrefixes(config: Keyspace): string[] {
  return [config.redis.prefix, ...appsWithOwnTag(config).map((app) => appRedisPrefix(config.redis.prefix, app))];
}
