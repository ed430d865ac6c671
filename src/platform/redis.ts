import { Cluster, Redis, type RedisOptions } from 'ioredis';

export type { Redis };

/**
 * Workers block on Redis and must wait through outages (maxRetriesPerRequest: null, offline queue on);
 * producers give up after a couple of reconnects so an outage surfaces as an error instead of an await that
 * never returns. With `cluster`, `url` is the seed node of a Redis Cluster (BullMQ takes either client).
 */
export function createRedis(url: string, role: 'worker' | 'producer', options: { cluster?: boolean } = {}): Redis {
  const retryStrategy = (times: number) => Math.min(200 * 2 ** Math.min(times, 6), 5000);
  const perRole: RedisOptions = role === 'worker' ? { maxRetriesPerRequest: null } : { maxRetriesPerRequest: 2 };
  if (options.cluster) {
    const seed = new URL(url);
    const cluster = new Cluster([{ host: seed.hostname, port: Number(seed.port || 6379) }], {
      enableOfflineQueue: true,
      clusterRetryStrategy: retryStrategy,
      redisOptions: {
        ...perRole,
        password: seed.password ? decodeURIComponent(seed.password) : undefined,
        username: seed.username || undefined,
        tls: seed.protocol === 'rediss:' ? {} : undefined,
      },
    });
    // BullMQ and our code use the shared command surface; the Cluster client provides it.
    return cluster as unknown as Redis;
  }
  return new Redis(url, { retryStrategy, enableOfflineQueue: true, ...perRole });
}
