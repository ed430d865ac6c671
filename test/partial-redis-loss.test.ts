import { Writable } from 'node:stream';
import { channelQueueSpecs } from '../src/channels/channel-set.ts';
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { ledgerStatusCounts } from './helpers/outbox.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { CHANNEL_TENCENT_IM_C2C, type LedgerKey } from '../src/ledger/types.ts';
import { createRedis } from '../src/platform/redis.ts';
import { buildProcess, type NoticeProcess } from '../cli/run-roles.ts';
import { createDeliverQueues, deliverJobId, enqueueDeliveries, type DeliverJobData, type DeliverQueues, type DeliverRowData } from '../queues/deliver-queue.ts';
import { inspectJobs } from '../queues/job-repair.ts';
import { Reconciler } from '../src/delivery/reconciler.ts';

let env: TestEnv | undefined;
let redis: Redis | undefined;
let queue: Queue<DeliverJobData> | undefined;
let queues: DeliverQueues | undefined;
let procs: NoticeProcess[] = [];
afterEach(async () => {
  for (const p of procs) await p.stop();
  procs = [];
  await queues?.close();
  redis?.disconnect();
  await env?.close();
  env = queue = queues = redis = undefined;
});

const OLD = Date.now() - 3_600_000;

function row(n: number) {
  return {
    sourceName: 'wallet_outbox',
    appCode: 'lalu',
    sourceEventId: `half_${n}`,
    channel: CHANNEL_TENCENT_IM_C2C,
    eventType: 'WalletBalanceChanged',
    userId: String(60000 + n),
    noticeKind: 'wallet_notice',
    status: 'pending' as const,
    payload: JSON.stringify({ event_id: `half_${n}` }),
    lastErrorCode: null,
    lastError: null,
    sourceRowId: n,
    sourceCreatedAtMs: OLD,
  };
}
const keyOf = (n: number): LedgerKey => ({ sourceName: 'wallet_outbox', appCode: 'lalu', sourceEventId: `half_${n}`, channel: CHANNEL_TENCENT_IM_C2C });

/**
 * `count` pending rows in the ledger, each with its job queued; then part of Redis is lost the way a lagging replica
 * or a cleanup leaves it: ids taken out of the wait list with their hash kept (orphans), hashes deleted with the id
 * still queued (ghosts).
 */
async function queuedThenHalfLost(count: number, orphans: number[], ghosts: number[], activeWithoutLock: number[] = []) {
  const ledger = new LedgerRepository(env!.notice);
  await ledger.insertIfAbsent(
    Array.from({ length: count }, (_, i) => row(i)),
    OLD,
  );
  redis = createRedis(env!.config.redis.url, 'producer');
  queues = createDeliverQueues(redis, env!.config.redis.prefix, channelQueueSpecs(env!.config));
  queue = queues.queueFor({ channel: 'tencent_im_c2c', noticeKind: 'wallet_notice' });
  await enqueueDeliveries(
    queues,
    Array.from({ length: count }, (_, i) => ({ key: keyOf(i), eventType: 'WalletBalanceChanged', noticeKind: 'wallet_notice', maxRetryCount: 3 })),
  );
  const waitKey = queue.toKey('wait');
  for (const n of orphans) await redis.lrem(waitKey, 0, deliverJobId(keyOf(n)));
  for (const n of ghosts) await redis.del(queue.toKey(deliverJobId(keyOf(n))));
  // Left in active by a worker that died, with its lock gone: BullMQ's stalled check must bring these back.
  for (const n of activeWithoutLock) {
    await redis.lrem(waitKey, 0, deliverJobId(keyOf(n)));
    await redis.rpush(queue.toKey('active'), deliverJobId(keyOf(n)));
  }
  return ledger;
}

describe('partial Redis loss: the reconciler repairs what BullMQ cannot see', () => {
  it('clears orphan hashes (in no state) and re-adds their rows; a locked orphan is left for later', async () => {
    env = await createTestEnv({ reconciler: { interval: '60s', pending_grace: '1s', batch_size: 100 } });
    const orphans = Array.from({ length: 10 }, (_, i) => i);
    const ledger = await queuedThenHalfLost(30, orphans, []);
    // One orphan holds a lock: a worker may still be running it, so it must not be removed under that worker.
    const lockedId = deliverJobId(keyOf(9));
    await redis!.set(`${queue!.toKey(lockedId)}:lock`, 'someone-else', 'PX', 60_000);
    expect(
      await inspectJobs(
        queue!,
        redis!,
        orphans.map((n) => deliverJobId(keyOf(n))),
      ),
    ).toEqual(Array(10).fill('orphan'));

    const reconciler = new Reconciler({
      ledger,
      queues: queues!,
      redis: redis!,
      config: env.config,
      owner: 'test',
      maxRetryFor: () => 3,
      logger: pino({ level: 'silent' }),
    });
    const pass = await reconciler.runOnce();
    expect(pass).toMatchObject({ requeued: 9, locked: 1, live: 20 });
    const states = await Promise.all(orphans.map((n) => queue!.getJobState(deliverJobId(keyOf(n)))));
    expect(states.filter((s) => s === 'waiting')).toHaveLength(9);
    expect(states[9]).toBe('unknown');
    // The re-added jobs carry their keys again (a swallowed add would have kept the orphan, with the state unknown).
    expect(((await queue!.getJob(deliverJobId(keyOf(0))))!.data as DeliverRowData).sourceEventId).toBe('half_0');
    expect(await redis!.exists(queue!.toKey(lockedId))).toBe(1);

    // Once the lock is gone (its worker died), the next pass takes that one too.
    await redis!.del(`${queue!.toKey(lockedId)}:lock`);
    await env.notice.query('UPDATE notice_delivery_events SET updated_at_ms = ?', [OLD]);
    expect((await reconciler.runOnce()).requeued).toBe(1);
    expect(await queue!.getJobState(lockedId)).toBe('waiting');
  });

  it('300 queued, 100 orphaned, 100 ghosted, 20 left active without a lock: each delivered once, no error-level log line', async () => {
    env = await createTestEnv({
      reconciler: { interval: '300ms', pending_grace: '500ms', batch_size: 100 },
      deliver: { job_lock_duration: '2s' },
      log: { level: 'info' },
    });
    const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
    await queuedThenHalfLost(300, range(0, 100), range(100, 100), range(200, 20));
    const lines: Array<{ level: number; msg: string }> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
        done();
      },
    });
    const proc = await buildProcess(env.config, ['deliver'], pino({ level: 'info' }, sink));
    procs.push(proc);
    await proc.start();

    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 300,
      30_000,
      'all 300 delivered',
    );
    const perEvent = new Map<string, number>();
    for (const m of env.fakeIm.delivered()) perEvent.set(JSON.parse(m.data).event_id, (perEvent.get(JSON.parse(m.data).event_id) ?? 0) + 1);
    expect(perEvent.size).toBe(300);
    expect([...perEvent.values()].every((n) => n === 1)).toBe(true);
    const metrics = await proc.metrics.render();
    expect(metrics).toMatch(/notice_reconciler_orphan_jobs_cleared_total 100/);
    expect(metrics).toMatch(/notice_deliver_ghost_jobs_total 100/);
    expect(lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([]);
  });
});
