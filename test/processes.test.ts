import { afterEach, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { spawnNotice, stopGracefully, waitForOutput, type Spawned } from './helpers/spawn.ts';

let env: TestEnv | undefined;
let running: Spawned[] = [];

afterEach(async () => {
  for (const p of running) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  running = [];
  await env?.close();
  env = undefined;
});

function start(role: string, configFile: string): Spawned {
  const proc = spawnNotice([role, '--config', configFile], { TEST_LOG_LEVEL: 'info' });
  running.push(proc);
  return proc;
}

describe('notice-service processes', () => {
  it('two ingest and two deliver processes together deliver each event exactly once', async () => {
    env = await createTestEnv({ log: { level: 'debug' } });
    const procs = [start('ingest', env.configFile), start('ingest', env.configFile), start('deliver', env.configFile), start('deliver', env.configFile)];
    await Promise.all(procs.map((p) => waitForOutput(p, /notice-service started/)));
    for (let batch = 0; batch < 8; batch++) {
      await insertWalletRows(
        env.owner,
        env.config.wallet_database,
        Array.from({ length: 50 }, (_, i) => balanceChanged(batch * 50 + i + 1)),
      );
      await new Promise((r) => setTimeout(r, 40));
    }
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 400,
      30_000,
      '400 delivered',
    );
    await new Promise((r) => setTimeout(r, 500));
    // Each event reached its user once. A resend of the very same message (a job that stalled under a CPU-starved
    // test machine) is tolerated at the edge and dropped by Tencent's duplicate filter; there must be no more.
    expect(env.fakeIm.delivered()).toHaveLength(400);
    expect(new Set(env.fakeIm.delivered().map((m) => JSON.parse(m.data).event_id)).size).toBe(400);
    expect(env.fakeIm.messages().length).toBeLessThanOrEqual(402);
    // Both deliver processes did work; exactly one ingest process held the lease.
    const deliveredBy = [procs[2]!, procs[3]!].map(
      (p) =>
        p
          .output()
          .split('\n')
          .filter((l) => l.includes('"msg":"delivered"')).length,
    );
    expect(deliveredBy[0]! + deliveredBy[1]!).toBe(400);
    expect(Math.min(...deliveredBy)).toBeGreaterThan(0);
    const leaseHolders = [procs[0]!, procs[1]!].filter((p) => p.output().includes('ingest lease acquired'));
    expect(leaseHolders).toHaveLength(1);
    const codes = await Promise.all(procs.map(stopGracefully));
    expect(codes).toEqual([0, 0, 0, 0]);
  });

  it('reclaims the expired lock of a deliver process killed mid-send, and delivers the event', async () => {
    env = await createTestEnv({ log: { level: 'info' } });
    env.fakeIm.setFaults({ delay_ms: 1500 });
    const first = start('deliver', env.configFile);
    const ingest = start('ingest', env.configFile);
    await waitForOutput(first, /notice-service started/);
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1)]);
    await waitFor(
      async () => (await env!.notice.query<any[]>('SELECT status FROM notice_delivery_events'))[0][0]?.status,
      (s) => s === 'delivering',
    );
    await waitFor(
      async () => env!.fakeIm.getStats().requests,
      (n) => n === 1,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    env.fakeIm.setFaults({});
    const second = start('deliver', env.configFile);
    const [row] = (await waitFor(
      async () => (await env!.notice.query<any[]>('SELECT * FROM notice_delivery_events'))[0],
      (rows) => rows[0]?.status === 'delivered',
      30_000,
      'redelivery after the kill',
    )) as any[];
    expect(row.claim_count).toBe(2);
    expect(row.locked_by).toBeNull();
    // The killed send reached fake-im; the second is the same MsgRandom/MsgSeq/body, so Tencent's filter drops it.
    const messages = env.fakeIm.messages();
    expect(messages.length).toBeGreaterThanOrEqual(1);
    expect(env.fakeIm.delivered()).toHaveLength(1);
    await Promise.all([stopGracefully(second), stopGracefully(ingest)]);
  });

  it('exits non-zero with one message naming every bad key', async () => {
    env = undefined;
    const file = `${process.cwd()}/.tmp/bad-${process.pid}.yaml`;
    writeFileSync(
      file,
      'mysql: { url: 42 }\nredis: { url: "redis://x" }\ntencent_im: { enabled: maybe }\nwallet_notice_worker: { poll_interval: fast }\nextra_key: 1\n',
    );
    const proc = spawnNotice(['ingest', '--config', file]);
    expect(await proc.exited).toBe(2);
    const out = proc.output();
    expect(out).toContain('invalid config');
    for (const key of ['mysql.url', 'tencent_im.enabled', 'wallet_notice_worker.poll_interval', 'extra_key: unknown key']) expect(out).toContain(key);
  });

  it('deliver refuses to start while every channel is off, naming the keys that turn one on', async () => {
    env = await createTestEnv({ tencent_im: { enabled: false } });
    const proc = spawnNotice(['deliver', '--config', env.configFile]);
    expect(await proc.exited).toBe(2);
    expect(proc.output()).toContain('deliver refuses to start: no notice kind is routed to any channel');
    expect(proc.output()).toContain('tencent_im_c2c: tencent_im.enabled, tencent_im.kinds');
  });

  it('deliver refuses to start when a kind is routed to the C2C channel while tencent_im.enabled is false', async () => {
    env = await createTestEnv({ tencent_im: { enabled: false }, channel_overrides: { WalletBalanceChanged: ['tencent_im_c2c'] } });
    const proc = spawnNotice(['deliver', '--config', env.configFile]);
    expect(await proc.exited).toBe(2);
    expect(proc.output()).toContain('tencent_im.enabled is false');
  });
});
