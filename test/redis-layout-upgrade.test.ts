import { Queue } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

/**
 * An upgrade from the release that kept every app's queues under the deployment's one hash tag: jobs left waiting
 * and delayed in the old keys are delivered once, through the new layout, and the old keys go away.
 */
let env: TestEnv | undefined;
const procs: NoticeProcess[] = [];
afterEach(async () => {
  for (const p of procs.splice(0)) await p.stop();
  await env?.close();
  env = undefined;
});

const HALA = { sdkAppId: 1400000002, secretKey: 'hala-secret-key-0000000000000001', adminIdentifier: 'hala_admin' };
const ZOZO = { sdkAppId: 1400000003, secretKey: 'zozo-secret-key-0000000000000002', adminIdentifier: 'zozo_admin' };

describe('Redis layout upgrade', () => {
  it('moves waiting and delayed jobs of the single-tag layout to each app’s own tag: every row sent once, old keys gone', async () => {
    env = await createTestEnv(
      {
        tencent_im: {
          apps: {
            hala: { sdk_app_id: HALA.sdkAppId, secret_key: HALA.secretKey, admin_identifier: HALA.adminIdentifier },
            zozo: { sdk_app_id: ZOZO.sdkAppId, secret_key: ZOZO.secretKey, admin_identifier: ZOZO.adminIdentifier },
          },
        },
        // The reconciler would re-queue stranded rows after its grace; with a long one, only the move can deliver them.
        reconciler: { interval: '300ms', pending_grace: '10m' },
      },
      { fakeImApps: [HALA, ZOZO] },
    );
    const prefix = env.config.redis.prefix;
    const rows = ['lalu', 'hala', 'zozo'].flatMap((app) => Array.from({ length: 20 }, (_, i) => ({ ...balanceChanged(i + 1), app_code: app })));
    await insertWalletRows(env.owner, env.config.wallet_database, rows);
    const ingest = await startPipeline(env.config, ['ingest']);
    procs.push(ingest);
    const appQueues = ingest.queues.all.filter((q) => q.opts.prefix !== prefix).map((q) => ({ name: q.name, prefix: q.opts.prefix! }));
    expect(new Set(appQueues.map((q) => q.prefix))).toEqual(new Set([`${prefix.slice(0, -1)}:hala}`, `${prefix.slice(0, -1)}:zozo}`]));
    const queued = async () =>
      (await Promise.all(ingest.queues.all.map((q) => q.getJobCountByTypes('wait', 'delayed', 'prioritized')))).reduce((a, b) => a + b, 0);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.pending === 60,
      20_000,
      '60 pending rows',
    );
    await waitFor(queued, (n) => n > 0, 20_000, 'jobs queued');
    await ingest.stop();
    procs.length = 0;

    // What the previous release left: the apps' jobs under the deployment's tag, some of them delayed.
    let moved = 0;
    for (const at of appQueues) {
      const current = new Queue(at.name, { connection: env.redis, prefix: at.prefix });
      const old = new Queue(at.name, { connection: env.redis, prefix });
      const jobs = await current.getJobs(['waiting', 'prioritized', 'delayed']);
      for (const [i, job] of jobs.entries()) {
        await old.add(job.name, job.data, { ...job.opts, jobId: job.id, delay: i % 2 === 0 ? 1500 : 0 });
        moved++;
      }
      await current.obliterate({ force: true });
      await Promise.all([old.close(), current.close()]);
    }
    expect(moved).toBeGreaterThan(0);
    const oldKeys = async () => (await env!.redis.keys(`${prefix}:deliver-*.*`)).length;
    expect(await oldKeys()).toBeGreaterThan(0);

    const deliver = await startPipeline(env.config, ['deliver']);
    procs.push(deliver);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 60,
      30_000,
      'all 60 delivered',
    );
    await waitFor(oldKeys, (n) => n === 0, 20_000, 'the old queues removed');
    // Once each: 20 per app, through that app's own Tencent app, and no row was rescued by the reconciler instead.
    const perApp: Record<number, number> = {};
    for (const m of env.fakeIm.delivered()) perApp[m.sdkAppId] = (perApp[m.sdkAppId] ?? 0) + 1;
    expect(perApp).toEqual({ 1400000001: 20, [HALA.sdkAppId]: 20, [ZOZO.sdkAppId]: 20 });
    expect(await deliver.metrics.render()).not.toMatch(/^notice_reconciler_requeued_total\{[^}]*\} [1-9]/m);
    // The apps' keys now live under their own tags.
    expect((await env.redis.keys(`${prefix.slice(0, -1)}:hala}:*`)).length).toBeGreaterThan(0);
  });
});
