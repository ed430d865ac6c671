import { copyFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { PrivateRedis } from '../helpers/redis-server.ts';
import { PrivateRedisCluster } from '../helpers/redis-cluster.ts';

/**
 * The Redis a fault scenario runs against and the faults it can suffer: one private redis-server, or (FAULTS_REDIS=
 * cluster) a private 3-master Redis Cluster with a replica each. Each fault means the same on both: on a cluster it
 * hits every node at once.
 */
export interface RedisUnderTest {
  url: string;
  cluster: boolean;
  /** FLUSHALL on every master. */
  flushAll(): Promise<void>;
  /** Every node SIGKILLed, then (after `downMs`) started again empty. */
  killAndRestartEmpty(downMs: number): Promise<void>;
  /** SAVE on every node, kept aside as the snapshot. */
  snapshot(): Promise<void>;
  /** Every node SIGKILLed and started again from the snapshot (a failover to a lagging replica, everywhere). */
  restoreSnapshot(): Promise<void>;
  /** Deletes every key matching `pattern`, one DEL at a time with `pauseMs` between; the number deleted. */
  deleteOneByOne(pattern: string, pauseMs: number): Promise<number>;
  destroy(): Promise<void>;
}

export async function startRedisUnderTest(kind = process.env.FAULTS_REDIS ?? 'single'): Promise<RedisUnderTest> {
  if (kind === 'cluster') {
    const cluster = new PrivateRedisCluster(3, 1);
    await cluster.start();
    return new ClusterUnderTest(cluster);
  }
  const server = new PrivateRedis(['--maxmemory-policy', 'noeviction']);
  const url = await server.start();
  return new NodesUnderTest(url, false, [server]);
}

/** What both kinds share: faults applied to a list of nodes. */
class NodesUnderTest implements RedisUnderTest {
  constructor(
    readonly url: string,
    readonly cluster: boolean,
    protected readonly nodes: PrivateRedis[],
  ) {}

  /** The nodes that take writes (every one, for a single server). */
  protected async writable(): Promise<PrivateRedis[]> {
    return this.nodes;
  }

  async flushAll(): Promise<void> {
    for (const node of await this.writable()) await withClient(node, (c) => c.flushall());
  }

  async killAndRestartEmpty(downMs: number): Promise<void> {
    for (const node of this.nodes) await node.stop();
    for (const node of this.nodes) rmSync(join(node.dir, 'dump.rdb'), { force: true });
    await new Promise((r) => setTimeout(r, downMs));
    for (const node of this.nodes) await node.start(node.port);
    await this.settle();
  }

  async snapshot(): Promise<void> {
    for (const node of this.nodes) {
      await withClient(node, (c) => c.save());
      copyFileSync(join(node.dir, 'dump.rdb'), join(node.dir, 'snapshot.rdb'));
    }
  }

  async restoreSnapshot(): Promise<void> {
    for (const node of this.nodes) await node.stop();
    for (const node of this.nodes) if (existsSync(join(node.dir, 'snapshot.rdb'))) copyFileSync(join(node.dir, 'snapshot.rdb'), join(node.dir, 'dump.rdb'));
    for (const node of this.nodes) await node.start(node.port);
    await this.settle();
  }

  async deleteOneByOne(pattern: string, pauseMs: number): Promise<number> {
    let deleted = 0;
    for (const node of await this.writable())
      await withClient(node, async (client) => {
        let cursor = '0';
        do {
          const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 20);
          cursor = next;
          for (const key of keys) {
            deleted += await client.del(key).catch(() => 0); // a key moved meanwhile (failover) is skipped
            await new Promise((r) => setTimeout(r, pauseMs));
          }
        } while (cursor !== '0');
      });
    return deleted;
  }

  protected async settle(): Promise<void> {}

  async destroy(): Promise<void> {
    for (const node of this.nodes) await node.destroy();
  }
}

class ClusterUnderTest extends NodesUnderTest {
  constructor(private readonly redisCluster: PrivateRedisCluster) {
    super(redisCluster.seedUrl, true, redisCluster.nodes);
  }

  protected override async writable(): Promise<PrivateRedis[]> {
    const masters = new Set((await this.redisCluster.topology()).filter((n) => n.role === 'master').map((n) => n.port));
    return this.nodes.filter((n) => masters.has(n.port));
  }

  protected override async settle(): Promise<void> {
    await this.redisCluster.waitUntilHealthy();
  }
}

async function withClient<T>(node: PrivateRedis, run: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 3 });
  try {
    return await run(client);
  } finally {
    client.disconnect();
  }
}
