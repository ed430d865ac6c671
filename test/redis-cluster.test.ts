import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { PrivateRedisCluster } from './helpers/redis-cluster.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

/** BullMQ on a real Redis Cluster on loopback (3 masters, a replica each): each app's keys under a hash tag of its own. */
const cluster = new PrivateRedisCluster(3, 1);

beforeAll(async () => {
  await cluster.start();
}, 120_000);

afterAll(async () => {
  await cluster.destroy();
});

const HALA = { sdkAppId: 1400000002, secretKey: 'hala-secret-key-0000000000000001', adminIdentifier: 'hala_admin' };
const ZOZO = { sdkAppId: 1400000003, secretKey: 'zozo-secret-key-0000000000000002', adminIdentifier: 'zozo_admin' };
const APPS = ['lalu', 'hala', 'zozo'] as const;

describe('Redis Cluster', () => {
  let env: TestEnv | undefined;
  let proc: NoticeProcess | undefined;
  afterAll(async () => {
    await proc?.stop();
    await env?.close();
  });

  it('runs the whole pipeline: every event delivered once, retries and the reconciler included', async () => {
    env = await createTestEnv({
      redis: { url: cluster.seedUrl, cluster: true, prefix: '{notice-cluster}' },
      reconciler: { interval: '300ms', pending_grace: '500ms' },
    });
    env.fakeIm.setFaults({ errors: [{ code: 70500, count: 5 }], not_imported: ['10003'] });
    const pipeline = await startPipeline(env.config);
    try {
      await insertWalletRows(
        env.owner,
        env.config.wallet_database,
        Array.from({ length: 200 }, (_, i) => balanceChanged(i + 1)),
      );
      await waitFor(
        () => ledgerStatusCounts(env!.notice),
        (c) => c.delivered === 196 && c.failed === 4,
        30_000,
        '196 delivered, 4 not imported',
      );
      expect(env.fakeIm.delivered()).toHaveLength(196);
      const ready = await pipeline.readiness();
      expect(ready.ready).toBe(true);
    } finally {
      await pipeline.stop();
      await env.close();
      env = undefined;
    }
  });

  it('three apps spread their commands over the masters (none over half); a SIGKILLed master’s replica takes over: 0 lost, 0 duplicates, 0 stuck', async () => {
    env = await createTestEnv(
      {
        redis: { url: cluster.seedUrl, cluster: true, prefix: '{nc3}' },
        tencent_im: {
          apps: {
            hala: { sdk_app_id: HALA.sdkAppId, secret_key: HALA.secretKey, admin_identifier: HALA.adminIdentifier },
            zozo: { sdk_app_id: ZOZO.sdkAppId, secret_key: ZOZO.secretKey, admin_identifier: ZOZO.adminIdentifier },
          },
        },
        reconciler: { interval: '1s', pending_grace: '3s' },
      },
      { fakeImApps: [HALA, ZOZO] },
    );
    // lalu is the single-app shorthand, under the deployment's tag; hala and zozo have tags of their own.
    const tags = ['{nc3}', '{nc3:hala}', '{nc3:zozo}'];
    await cluster.spreadTags(tags);
    cluster.resetStats();
    proc = await startPipeline(env.config);

    let written = 0;
    const write = async (rows: number) => {
      const batch = Array.from({ length: rows }, (_, i) => {
        const n = written + i + 1;
        return { ...balanceChanged(n), app_code: APPS[n % 3]!, user_id: String(10000 + n) };
      });
      written += rows;
      await insertWalletRows(env!.owner, env!.config.wallet_database, batch);
    };
    /** ~100 facts/s for this long, as owners write them. */
    const writeFor = async (ms: number) => {
      for (const end = Date.now() + ms; Date.now() < end; ) {
        await write(10);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const allDelivered = () =>
      waitFor(
        () => ledgerStatusCounts(env!.notice),
        (c) => c.delivered === written,
        60_000,
        `all ${written} delivered`,
      );

    await writeFor(4000);
    await allDelivered();
    const commands = await cluster.commandsByMaster();
    const total = [...commands.values()].reduce((a, b) => a + b, 0);
    const shares = [...commands.values()].map((n) => n / total);
    expect(total).toBeGreaterThan(1000);
    expect(Math.max(...shares), JSON.stringify(Object.fromEntries(commands))).toBeLessThanOrEqual(0.5);

    // The master holding hala's keys dies mid-stream; its replica is promoted by the cluster itself.
    const victim = await cluster.masterOf('{nc3:hala}');
    const writing = writeFor(6000);
    await new Promise((r) => setTimeout(r, 1500));
    await cluster.kill(victim.port);
    await writing;
    await cluster.waitUntilHealthy();
    await allDelivered();
    expect((await cluster.masterOf('{nc3:hala}')).port).not.toBe(victim.port);
    const counts = await ledgerStatusCounts(env.notice);
    expect(counts).toEqual({ delivered: written }); // nothing stuck or failed
    // Each fact reached its user exactly once: no loss, and no duplicate a user would see.
    const seen = new Map<string, number>();
    for (const m of env.fakeIm.delivered()) seen.set(`${m.sdkAppId}:${m.toAccount}:${m.data}`, (seen.get(`${m.sdkAppId}:${m.toAccount}:${m.data}`) ?? 0) + 1);
    expect(seen.size).toBe(written);
    expect([...seen.values()].filter((n) => n > 1)).toEqual([]);
  }, 180_000);
});
