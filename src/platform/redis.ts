import { Redis, type RedisOptions } from 'ioredis';

export type { Redis };

/**
 * Workers block on Redis and must wait through outages (maxRetriesPerRequest: null, offline queue on);
 * producers give up after a couple of reconnects so an outage surfaces as an error instead of an await that
 * never returns.
 */
export function createRedis(url: string, role: 'worker' | 'producer', extra: RedisOptions = {}): Redis {
  const common: RedisOptions = {
    lazyConnect: false,
    retryStrategy: (times) => Math.min(200 * 2 ** Math.min(times, 6), 5000),
    ...extra,
  };
  return role === 'worker'
    ? new Redis(url, { ...common, maxRetriesPerRequest: null, enableOfflineQueue: true })
    : new Redis(url, { ...common, maxRetriesPerRequest: 2, enableOfflineQueue: true });
}
