import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv, MYSQL_HOST, MYSQL_PORT, mysqlServerVia } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { TcpProxy } from './helpers/tcp-proxy.ts';
import { PrivateRedis } from './helpers/redis-server.ts';
import { spawnNotice, stopGracefully, waitForOutput } from './helpers/spawn.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let tcp: TcpProxy | undefined;
let redis: PrivateRedis | undefined;
afterEach(async () => {
  await proc?.stop();
  await tcp?.down();
  await redis?.destroy();
  await env?.close();
  proc = env = tcp = redis = undefined;
});

describe('outages', () => {
  it('Redis down: ingest keeps its cursor and retries, deliver waits; both resume without loss', async () => {
    redis = new PrivateRedis(['--maxmemory-policy', 'noeviction']);
    const url = await redis.start();
    env = await createTestEnv({ redis: { url }, reconciler: { interval: '300ms', pending_grace: '500ms' } });
    proc = await startPipeline(env.config);
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1)]);
    await waitFor(
      async () => env!.fakeIm.delivered().length,
      (n) => n === 1,
    );
    const poller = proc.ingest!.pollers[0]!;
    const before = poller.cursor!.highWaterId;

    await redis.stop();
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 20 }, (_, i) => balanceChanged(i + 2)),
    );
    await waitFor(
      async () => poller.stats.errors,
      (n) => n >= 2,
      15_000,
      'ingest noticing the outage',
    );
    // Rows may be in the ledger already, but nothing is marked read that is not enqueued.
    expect(poller.cursor!.highWaterId).toBe(before);
    expect(poller.isRunning).toBe(true);
    expect(proc.deliver!.isRunning()).toBe(true);

    await redis.start(redis.port); // restarted empty
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 21,
      30_000,
      'delivery after Redis is back',
    );
    expect(env.fakeIm.delivered()).toHaveLength(21);
    expect(poller.cursor!.highWaterId).toBe(21);
  });

  it('MySQL down: deliver does not record a job as done without its ledger update, and spends no attempts waiting', async () => {
    tcp = new TcpProxy(MYSQL_HOST, MYSQL_PORT);
    await tcp.start();
    env = await createTestEnv(
      { deliver: { retry_base_delay: '100ms', retry_max_delay: '500ms' }, wallet_notice_worker: { max_retry_count: 1 } },
      { mysqlServerForService: mysqlServerVia(tcp.port) },
    );
    env.fakeIm.setFaults({ delay_ms: 800 });
    proc = await startPipeline(env.config);
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1), balanceChanged(2)]);
    await waitFor(
      async () => env!.fakeIm.getStats().requests,
      (n) => n >= 1,
      10_000,
      'sends in flight',
    );
    await tcp.down(); // the sends succeed at fake-im, but their outcome cannot be recorded
    await new Promise((r) => setTimeout(r, 3000));
    expect(proc.deliver!.isRunning()).toBe(true);
    expect(proc.ingest!.pollers[0]!.isRunning).toBe(true);
    env.fakeIm.setFaults({});
    await tcp.up();
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 2,
      30_000,
      'delivered after MySQL is back',
    );
    // Resends after the outage hit Tencent's duplicate filter; users see each notice once.
    expect(env.fakeIm.delivered()).toHaveLength(2);
    const [rows] = await env.notice.query<any[]>('SELECT attempt_count FROM notice_delivery_events');
    expect(rows.map((r) => r.attempt_count)).toEqual([1, 1]);
  });

  it('warns loudly at start-up when Redis may evict keys', async () => {
    redis = new PrivateRedis(['--maxmemory-policy', 'allkeys-lru']);
    const url = await redis.start();
    env = await createTestEnv({ redis: { url }, log: { level: 'info' } });
    const p = spawnNotice(['ingest', '--config', env.configFile]);
    await waitForOutput(p, /notice-service started/);
    expect(p.output()).toContain('REDIS maxmemory-policy IS NOT noeviction');
    expect(p.output()).toContain('"maxmemory_policy":"allkeys-lru"');
    expect(await stopGracefully(p)).toBe(0);
  });
});
