import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows } from './helpers/outbox.ts';
import { activityEvent, insertActivityRows } from './helpers/activity.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { spawnNotice } from './helpers/spawn.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { runRequeue } from '../src/ops/requeue-run.ts';
import { AuditLog } from '../src/ops/audit-log.ts';

/**
 * `requeue --status failed` while the provider still refuses: every failed row is requeued once, the command ends,
 * and the audit row is there from the start. (It once paged newest-first with an offset, so a requeued row that
 * failed again came back on top: 400 rows became 443 sends, and 300 pushes never ended.)
 */
let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;

afterEach(async () => {
  await proc?.stop();
  await env?.close();
  proc = undefined;
  env = undefined;
});

const statusCounts = async (channel: string) =>
  Object.fromEntries(
    (await env!.notice.query<any[]>('SELECT status, COUNT(*) AS n FROM notice_delivery_events WHERE channel = ? GROUP BY status', [channel]))[0].map((r) => [
      r.status,
      Number(r.n),
    ]),
  );

async function requeueWhileFailing(channel: string, n: number, sends: () => number): Promise<void> {
  await waitFor(
    () => statusCounts(channel),
    (c) => c.failed === n,
    60_000,
    `${n} failed ${channel} rows`,
  );
  const before = sends();
  const run = spawnNotice(['requeue', '--status', 'failed', '--channel', channel, '--yes', '--output', 'json', '--config', env!.configFile]);
  const code = await Promise.race([run.exited, new Promise((r) => setTimeout(() => r('still running after 60 s'), 60_000))]);
  if (code !== 0) run.child.kill('SIGKILL');
  expect(code).toBe(0);
  expect(JSON.parse(run.output().slice(run.output().lastIndexOf('{\n')))).toMatchObject({ matched: n, requeued: n });
  expect(run.output()).toMatch(new RegExp(`requeue: ${n} matched, ${n} requeued`));
  // Every requeued row fails once more at the provider, and only once.
  await waitFor(
    () => statusCounts(channel),
    (c) => c.failed === n,
    60_000,
    `the ${n} rows failed again`,
  );
  await new Promise((r) => setTimeout(r, 500));
  expect(sends() - before).toBe(n);
  const [audit] = await new AuditLog(env!.notice).recent(1);
  expect(audit).toMatchObject({ action: 'requeue_failed', via: 'cli', matched: n, affected: n, detail: { channel, state: 'done' } });
}

describe('requeue of failed rows while the provider still fails', () => {
  it('C2C: 450 failed rows (3 pages) → 450 sends, the command ends', async () => {
    env = await createTestEnv({ wallet_notice_worker: { enabled: true, max_retry_count: 0 } });
    const users = Array.from({ length: 50 }, (_, i) => String(10000 + i));
    env.fakeIm.setFaults({ not_imported: users });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 450 }, (_, i) => balanceChanged(i + 1)),
    );
    proc = await startPipeline(env.config, ['ingest', 'deliver']);
    await requeueWhileFailing('tencent_im_c2c', 450, () => env!.fakeIm.getStats().by_code['90012'] ?? 0);
  });

  it('push: 300 failed pushes (ErrorList 70107) → 300 accounts pushed once each, the command ends', async () => {
    env = await createTestEnv({
      wallet_notice_worker: { enabled: false },
      activity_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s', max_retry_count: 0 },
      tencent_push: { enabled: true, batch_linger: '10ms' },
    });
    const events = Array.from({ length: 300 }, (_, i) => activityEvent(i + 1));
    env.fakeIm.setPushFaults({ not_imported: events.map((e) => e.user_id!) });
    await insertActivityRows(env.owner, env.config.activity_database, events);
    proc = await startPipeline(env.config, ['ingest', 'deliver']);
    await requeueWhileFailing('tencent_push', 300, () => env!.fakeIm.pushes().reduce((sum, p) => sum + p.accounts.length + p.refused.length, 0));
  });

  it('writes the audit row when the run starts and keeps its progress, so a run cut short leaves a trace', async () => {
    env = await createTestEnv({ wallet_notice_worker: { enabled: true, max_retry_count: 0 } });
    env.fakeIm.setFaults({ not_imported: Array.from({ length: 50 }, (_, i) => String(10000 + i)) });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 250 }, (_, i) => balanceChanged(i + 1)),
    );
    proc = await startPipeline(env.config, ['ingest', 'deliver']);
    await waitFor(
      () => statusCounts('tencent_im_c2c'),
      (c) => c.failed === 250,
      60_000,
      '250 failed rows',
    );
    await proc.stop();
    proc = undefined;
    const { createDeliverQueues } = await import('../queues/deliver-queue.ts');
    const { channelQueueSpecs } = await import('../src/channels/channel-set.ts');
    const { createRedis } = await import('../src/platform/redis.ts');
    const redis = createRedis(env.config.redis.url, 'producer');
    const queues = createDeliverQueues(redis, env.config.redis.prefix, channelQueueSpecs(env.config));
    const seen: unknown[] = [];
    try {
      await expect(
        runRequeue(
          { pool: env.notice, queues, maxRetryFor: () => 0 },
          { actor: 'tester@host', via: 'cli' },
          { filter: {}, detail: { status: 'failed' } },
          {
            onProgress: async () => {
              seen.push((await new AuditLog(env!.notice).recent(1))[0]);
              throw new Error('operator pressed Ctrl-C');
            },
          },
        ),
      ).rejects.toThrow(/Ctrl-C/);
    } finally {
      await queues.close();
      redis.disconnect();
    }
    const [row] = await new AuditLog(env.notice).recent(1);
    expect(row).toMatchObject({
      actor: 'tester@host',
      matched: 200,
      affected: 200,
      detail: { state: expect.stringMatching(/stopped by an error: operator pressed Ctrl-C/) },
    });
  });
});
