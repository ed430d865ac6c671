import type { FakeImApp } from '../src/fake-im/server.ts';
import { createTestEnv, type TestEnv } from '../test/helpers/env.ts';
import { PrivateRedis } from '../test/helpers/redis-server.ts';
import { spawnNotice, waitForOutput, type Spawned } from '../test/helpers/spawn.ts';
import { cpuSeconds, peakRssMb, pidOf } from './proc-stats.ts';
import type { RowDataPacket } from 'mysql2/promise';

/** The notice-service settings every bench phase starts from (phases override a key or two). */
export const PIPELINE = {
  wallet_notice_worker: { poll_interval: '100ms', batch_size: 500, lock_ttl: '30s', max_retry_count: 10, gap_grace: '60s' },
  // Every event a send (the writer reuses users with rising versions): the overload phase turns skipping on.
  deliver: { concurrency: 64, retry_base_delay: '1s', retry_max_delay: '30s', job_lock_duration: '30s', skip_superseded: { WalletBalanceChanged: false } },
  tencent_im: { request_timeout: '3s', rate_limit_per_second: 0 },
  reconciler: { interval: '5s', pending_grace: '10s' },
};

/** BENCH_NODE_ARGS: node flags that NODE_OPTIONS refuses (--trace-gc, say), for every process the bench spawns. */
export function benchNodeArgs(): string[] {
  return process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
}

/** One bench setting: private databases, a private redis-server (its CPU and commands are ours alone), fake-im. */
export interface World {
  env: TestEnv;
  redis: PrivateRedis;
  procs: Array<{ role: string; proc: Spawned; cpuAtStart: number }>;
  spawn(role: 'ingest' | 'deliver' | 'inbox-api' | 'all'): Promise<Spawned>;
  counters(): Promise<Counters>;
  close(): Promise<void>;
}

export interface Counters {
  atMs: number;
  mysqlQuestions: number;
  /** Bytes MariaDB received from clients so far (statements' text and parameters). */
  mysqlBytesReceived: number;
  mysqlCpu: number;
  redisCommands: number;
  redisCpu: number;
  redisUsedMemory: number;
  /** Calls per Redis command so far (INFO commandstats; commands run inside Lua scripts count too). */
  redisCommandCalls: Record<string, number>;
}

/** `bin`: another tree's executable (bench/baseline-tree.ts), for a same-run comparison; default this tree's. */
export async function createWorld(config: Record<string, unknown>, options: { fakeImApps?: FakeImApp[]; bin?: string } = {}): Promise<World> {
  const redis = new PrivateRedis(['--maxmemory-policy', 'noeviction']);
  const url = await redis.start();
  const env = await createTestEnv(
    { log: { level: 'info' }, ...config, redis: { url, ...((config.redis as object) ?? {}) } },
    { fakeImApps: options.fakeImApps },
  );
  const procs: World['procs'] = [];
  const mariadbPid = pidOf('mariadbd') ?? pidOf('mysqld');
  const { Redis } = await import('ioredis');
  const stats = new Redis(url);
  const redisServerPid = Number(/process_id:(\d+)/.exec(await stats.info('server'))?.[1]);
  return {
    env,
    redis,
    procs,
    async spawn(role) {
      // BENCH_PROFILE=1 writes a V8 CPU profile per process into .tmp/prof (open it in Chrome DevTools).
      // The processes run with the V8 setting the Docker image uses (NOTICE_NODE_OPTIONS overrides it).
      const nodeOptions = process.env.NOTICE_NODE_OPTIONS ?? '--max-semi-space-size=4';
      const nodeArgs = [...(process.env.BENCH_PROFILE === '1' ? ['--cpu-prof', '--cpu-prof-dir=.tmp/prof'] : []), ...benchNodeArgs()];
      const proc = spawnNotice([role, '--config', env.configFile], { NODE_OPTIONS: nodeOptions }, nodeArgs, options.bin);
      await waitForOutput(proc, /notice-service started/, 30_000);
      procs.push({ role, proc, cpuAtStart: cpuSeconds(proc.child.pid!) });
      return proc;
    },
    async counters() {
      const [q] = await env.owner.query<RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Questions'");
      const [b] = await env.owner.query<RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Bytes_received'");
      const info = await stats.info();
      const commandstats = await stats.info('commandstats');
      const redisCommandCalls: Record<string, number> = {};
      for (const m of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) redisCommandCalls[m[1]!] = Number(m[2]);
      return {
        atMs: Date.now(),
        mysqlQuestions: Number(q[0]?.Value ?? 0),
        mysqlBytesReceived: Number(b[0]?.Value ?? 0),
        mysqlCpu: mariadbPid ? cpuSeconds(mariadbPid) : NaN,
        redisCommands: Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0),
        redisCpu: cpuSeconds(redisServerPid),
        redisUsedMemory: Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0),
        redisCommandCalls,
      };
    },
    async close() {
      for (const { proc } of procs) if (proc.child.exitCode === null) proc.child.kill('SIGTERM');
      await Promise.all(procs.map(({ proc }) => proc.exited));
      stats.disconnect();
      await env.close();
      await redis.destroy();
    },
  };
}

export function processUsage(world: World): Array<{ role: string; pid: number; cpu: number; peakRssMb: number }> {
  return world.procs.map(({ role, proc, cpuAtStart }) => ({
    role,
    pid: proc.child.pid!,
    cpu: cpuSeconds(proc.child.pid!) - cpuAtStart,
    peakRssMb: peakRssMb(proc.child.pid!),
  }));
}

/** The commands behind "Redis commands per event" between two counters (script calls included), most frequent first, those ≥ 0.1 per event. */
export function redisCommandsPerEvent(before: Counters, after: Counters, events: number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after.redisCommandCalls)
      .map(([name, calls]) => [name, Math.round(((calls - (before.redisCommandCalls[name] ?? 0)) / events) * 100) / 100] as const)
      .filter(([, perEvent]) => perEvent >= 0.1)
      .sort((x, y) => y[1] - x[1]),
  );
}
