import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { PrivateRedis } from './redis-server.ts';
import { freePort } from './ports.ts';

export interface ClusterNode {
  id: string;
  port: number;
  role: 'master' | 'replica';
  /** A replica's master. */
  masterId?: string;
  /** A master's slot ranges, inclusive. */
  slots: Array<[number, number]>;
}

/** A real Redis Cluster on loopback: `masters` masters with `replicas` replicas each, created by redis-cli. */
export class PrivateRedisCluster {
  readonly nodes: PrivateRedis[] = [];

  constructor(
    private readonly masters = 3,
    private readonly replicas = 1,
  ) {}

  get seedUrl(): string {
    return `redis://127.0.0.1:${this.nodes[0]!.port}`;
  }

  async start(): Promise<void> {
    for (let i = 0; i < this.masters * (1 + this.replicas); i++) {
      const node = new PrivateRedis([
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        '2000',
        '--maxmemory-policy',
        'noeviction',
      ]);
      await node.start(await freePort());
      this.nodes.push(node);
    }
    const create = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...this.nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(this.replicas), '--cluster-yes'],
      { encoding: 'utf8' },
    );
    if (create.status !== 0) throw new Error(`cluster create failed: ${create.stdout}${create.stderr}`);
    await this.waitUntilHealthy();
  }

  /** Until every live node says cluster_state:ok and the replicas are attached (a failover finished). */
  async waitUntilHealthy(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const live = this.nodes.filter((n) => n.running);
      const states = live.map((n) => spawnSync('redis-cli', ['-p', String(n.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout ?? '');
      if (states.every((s) => s.includes('cluster_state:ok'))) return;
      if (Date.now() > deadline) throw new Error(`cluster not healthy: ${states.map((s) => s.split('\n')[0]).join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The cluster as one live node sees it. */
  async topology(): Promise<ClusterNode[]> {
    const port = this.nodes.find((n) => n.running)!.port;
    const text = spawnSync('redis-cli', ['-p', String(port), 'cluster', 'nodes'], { encoding: 'utf8' }).stdout;
    return text
      .trim()
      .split('\n')
      .filter((line) => !line.includes('fail') && !line.includes('noaddr'))
      .map((line) => {
        const [id, address, flags, masterId, , , , , ...slots] = line.split(' ');
        return {
          id: id!,
          port: Number(address!.split('@')[0]!.split(':')[1]),
          role: flags!.includes('master') ? ('master' as const) : ('replica' as const),
          masterId: masterId === '-' ? undefined : masterId,
          slots: slots
            .filter((s) => !s.startsWith('['))
            .map((s) => {
              const [a, b] = s.split('-').map(Number);
              return [a!, b ?? a!] as [number, number];
            }),
        };
      });
  }

  async slotOf(tag: string): Promise<number> {
    return Number(spawnSync('redis-cli', ['-p', String(this.nodes[0]!.port), 'cluster', 'keyslot', tag], { encoding: 'utf8' }).stdout.trim());
  }

  async masterOf(tag: string): Promise<ClusterNode> {
    const slot = await this.slotOf(tag);
    const master = (await this.topology()).find((n) => n.role === 'master' && n.slots.some(([a, b]) => slot >= a && slot <= b));
    if (!master) throw new Error(`no master serves slot ${slot}`);
    return master;
  }

  /**
   * Puts each tag on a master of its own while their slots are still empty, as an operator does with a reshard when
   * two busy tags hash to one master: SETSLOT IMPORTING / MIGRATING, then NODE on every master.
   */
  async spreadTags(tags: readonly string[]): Promise<void> {
    const used = new Set<string>();
    for (const tag of tags) {
      const topology = await this.topology();
      const current = await this.masterOf(tag);
      if (!used.has(current.id)) {
        used.add(current.id);
        continue;
      }
      const target = topology.find((n) => n.role === 'master' && !used.has(n.id));
      if (!target) throw new Error(`more tags than masters: ${tags.join(', ')}`);
      const slot = String(await this.slotOf(tag));
      const at = (port: number) => new Redis(port, { lazyConnect: false });
      const [to, from] = [at(target.port), at(current.port)];
      try {
        await to.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', current.id);
        await from.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', target.id);
        for (const master of topology.filter((n) => n.role === 'master')) {
          const client = at(master.port);
          await client.call('CLUSTER', 'SETSLOT', slot, 'NODE', target.id);
          client.disconnect();
        }
      } finally {
        to.disconnect();
        from.disconnect();
      }
      used.add(target.id);
      await this.waitUntilHealthy();
    }
  }

  /** Every command the masters ran since the last reset, by master port (INFO commandstats, the test's own INFO and CONFIG left out). */
  async commandsByMaster(): Promise<Map<number, number>> {
    const counts = new Map<number, number>();
    for (const master of (await this.topology()).filter((n) => n.role === 'master')) {
      const text = spawnSync('redis-cli', ['-p', String(master.port), 'info', 'commandstats'], { encoding: 'utf8' }).stdout;
      let calls = 0;
      for (const m of text.matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+)/gm)) if (!/^(info|config)/.test(m[1]!)) calls += Number(m[2]);
      counts.set(master.port, calls);
    }
    return counts;
  }

  resetStats(): void {
    for (const n of this.nodes.filter((node) => node.running)) spawnSync('redis-cli', ['-p', String(n.port), 'config', 'resetstat']);
  }

  /** SIGKILLs the node on this port. */
  async kill(port: number): Promise<void> {
    await this.nodes.find((n) => n.port === port)!.stop();
  }

  async destroy(): Promise<void> {
    for (const node of this.nodes) await node.destroy();
  }
}
