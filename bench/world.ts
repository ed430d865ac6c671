import { createTestEnv, type TestEnv } from '../test/helpers/env.ts';
import { PrivateRedis } from '../test/helpers/redis-server.ts';
import { spawnNotice, waitForOutput, type Spawned } from '../test/helpers/spawn.ts';
import { cpuSeconds, peakRssMb, pidOf } from './proc-stats.ts';
import type { RowDataPacket } from 'mysql2/promise';

/** One bench setting: private databases, a private redis-server (its CPU and commands are ours alone), fake-im. */
export interface World {
  env: TestEnv;
  redis: PrivateRedis;
  procs: Array<{ role: string; proc: Spawned; cpuAtStart: number }>;
  spawn(role: 'ingest' | 'deliver'): Promise<Spawned>;
  counters(): Promise<Counters>;
  close(): Promise<void>;
}

export interface Counters {
  atMs: number;
  mysqlQuestions: number;
  mysqlCpu: number;
  redisCommands: number;
  redisCpu: number;
  redisUsedMemory: number;
}

export async function createWorld(config: Record<string, unknown>): Promise<World> {
  const redis = new PrivateRedis(['--maxmemory-policy', 'noeviction']);
  const url = await redis.start();
  const env = await createTestEnv({ log: { level: 'info' }, ...config, redis: { url, ...((config.redis as object) ?? {}) } });
  const procs: World['procs'] = [];
  const mariadbPid = pidOf('mariadbd') ?? pidOf('mysqld');
  const { Redis } = await import('ioredis');
  const stats = new Redis(url);
  const redisServerPid = Number(/process_id:(\d+)/.exec(await stats.info('server'))?.[1]);
  return {
    env, redis, procs,
    async spawn(role) {
      // BENCH_PROFILE=1 writes a V8 CPU profile per process into .tmp/prof (open it in Chrome DevTools).
      // The processes run with the V8 setting the Docker image uses (NOTICE_NODE_OPTIONS overrides it).
      const nodeOptions = process.env.NOTICE_NODE_OPTIONS ?? '--max-semi-space-size=4';
      // BENCH_NODE_ARGS adds node flags that NODE_OPTIONS refuses (--trace-gc, say) to every notice-service process.
      const nodeArgs = [...(process.env.BENCH_PROFILE === '1' ? ['--cpu-prof', '--cpu-prof-dir=.tmp/prof'] : []), ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [])];
      const proc = spawnNotice([role, '--config', env.configFile], { NODE_OPTIONS: nodeOptions }, nodeArgs);
      await waitForOutput(proc, /notice-service started/, 30_000);
      procs.push({ role, proc, cpuAtStart: cpuSeconds(proc.child.pid!) });
      return proc;
    },
    async counters() {
      const [q] = await env.owner.query<RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Questions'");
      const info = await stats.info();
      return {
        atMs: Date.now(),
        mysqlQuestions: Number(q[0]?.Value ?? 0),
        mysqlCpu: mariadbPid ? cpuSeconds(mariadbPid) : NaN,
        redisCommands: Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? 0),
        redisCpu: cpuSeconds(redisServerPid),
        redisUsedMemory: Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0),
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
  return world.procs.map(({ role, proc, cpuAtStart }) => ({ role, pid: proc.child.pid!, cpu: cpuSeconds(proc.child.pid!) - cpuAtStart, peakRssMb: peakRssMb(proc.child.pid!) }));
}
