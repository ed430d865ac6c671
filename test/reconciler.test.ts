import { afterEach, describe, expect, it } from 'vitest';
import { channelQueueSpecs } from '../src/channels/channel-set.ts';
import { pino } from 'pino';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { createTestEnv, type TestEnv } from './helpers/env.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { CHANNEL_TENCENT_IM_C2C } from '../src/ledger/types.ts';
import { createRedis } from '../src/platform/redis.ts';
import { createDeliverQueues, deliverJobId, queuedJobs, type DeliverJobData, type DeliverQueues } from '../queues/deliver-queue.ts';
import { Reconciler } from '../src/delivery/reconciler.ts';

let env: TestEnv | undefined;
let redis: Redis | undefined;
let queue: Queue<DeliverJobData> | undefined;
let queues: DeliverQueues | undefined;
afterEach(async () => {
  await queues?.close();
  redis?.disconnect();
  await env?.close();
  env = queue = queues = redis = undefined;
});

const OLD = Date.now() - 3_600_000;

function strandedRow(n: number) {
  return {
    sourceName: 'wallet_outbox',
    appCode: 'lalu',
    sourceEventId: `lost_${n}`,
    channel: CHANNEL_TENCENT_IM_C2C,
    eventType: 'WalletBalanceChanged',
    userId: String(50000 + n),
    noticeKind: 'wallet_notice',
    status: 'pending' as const,
    payload: JSON.stringify({ event_id: `lost_${n}` }),
    lastErrorCode: null,
    lastError: null,
    sourceRowId: n,
    sourceCreatedAtMs: OLD,
  };
}

/** A reconciler on its own (no deliver worker), so the jobs it gives stay in the queue to be counted. */
async function setUp(rows: number, maxQueuedJobs?: number) {
  env = await createTestEnv({ reconciler: { interval: '60s', pending_grace: '1s', batch_size: 100 } });
  const ledger = new LedgerRepository(env.notice);
  await ledger.insertIfAbsent(
    Array.from({ length: rows }, (_, i) => strandedRow(i)),
    OLD,
  );
  redis = createRedis(env.config.redis.url, 'producer');
  queues = createDeliverQueues(redis, env.config.redis.prefix, channelQueueSpecs(env.config));
  // The rows are wallet notices: their jobs live in that kind's queue.
  queue = queues.queueFor({ channel: 'tencent_im_c2c', noticeKind: 'wallet_notice' });
  const reconciler = new Reconciler({
    ledger,
    queues,
    redis,
    config: env.config,
    owner: 'test',
    maxRetryFor: () => 5,
    maxQueuedJobs,
    logger: pino({ level: 'silent' }),
  });
  return { ledger, reconciler, waiting: () => queuedJobs(queue!) };
}

describe('reconciler: rebuilding the work list after Redis is lost', () => {
  it('gives every stranded row a job in one pass, page after page, and none twice', async () => {
    const { reconciler, waiting } = await setUp(250);
    const first = await reconciler.runOnce();
    // One page per pass (batch_size 100) would have given 100 here and the rest over later intervals.
    expect(first.requeued).toBe(250);
    expect(await waiting()).toBe(250);
    const second = await reconciler.runOnce();
    expect(second.requeued).toBe(0);
    expect(await waiting()).toBe(250);
  });

  it('stops paging once the queue holds max_queued_jobs, and carries on in the next pass', async () => {
    const { reconciler, waiting } = await setUp(250, 150);
    expect((await reconciler.runOnce()).requeued).toBe(200); // pages of 100 until the queue held ≥ 150
    expect(await waiting()).toBe(200);
    // The first page of a pass always runs (stranded rows behind a full healthy queue still get their job).
    expect((await reconciler.runOnce()).requeued).toBe(50);
    expect(await waiting()).toBe(250);
  });

  it('a page whose rows all have live jobs ends the pass', async () => {
    const { reconciler, ledger } = await setUp(250);
    await reconciler.runOnce();
    // Make them all look stranded again while their jobs wait: one page is read, all live, and the pass ends.
    await env!.notice.query('UPDATE notice_delivery_events SET updated_at_ms = ?', [OLD]);
    const pass = await reconciler.runOnce();
    expect(pass).toMatchObject({ requeued: 0, stranded: 100, live: 100 });
    expect((await ledger.get({ sourceName: 'wallet_outbox', appCode: 'lalu', sourceEventId: 'lost_0', channel: CHANNEL_TENCENT_IM_C2C }))!.updatedAtMs).toBe(
      OLD,
    );
  });

  it('replaces a finished job under the same id instead of letting it swallow the add', async () => {
    const { reconciler, waiting } = await setUp(1);
    const key = { sourceName: 'wallet_outbox', appCode: 'lalu', sourceEventId: 'lost_0', channel: CHANNEL_TENCENT_IM_C2C };
    await queue!.add('WalletBalanceChanged', { ...key, eventType: 'WalletBalanceChanged' }, { jobId: deliverJobId(key) });
    const job = (await queue!.getJob(deliverJobId(key)))!;
    // Finished the way BullMQ keeps a completed job it has not removed yet (out of wait, into the completed set).
    await redis!.lrem(`${env!.config.redis.prefix}:${queue!.name}:wait`, 0, job.id!);
    await redis!.zadd(`${env!.config.redis.prefix}:${queue!.name}:completed`, Date.now(), job.id!);
    expect(await queue!.getJobState(deliverJobId(key))).toBe('completed');
    expect((await reconciler.runOnce()).requeued).toBe(1);
    expect(await queue!.getJobState(deliverJobId(key))).toBe('waiting');
    expect(await waiting()).toBe(1);
  });
});

describe('LedgerRepository.markRequeued', () => {
  it('restarts the stranded clock of rows nobody touched since the read, and leaves changed rows alone', async () => {
    env = await createTestEnv();
    const ledger = new LedgerRepository(env.notice);
    await ledger.insertIfAbsent([strandedRow(1), strandedRow(2), strandedRow(3)], OLD);
    await env.notice.query("UPDATE notice_delivery_events SET status = 'retryable', next_retry_at_ms = ? WHERE source_event_id = 'lost_2'", [OLD]);
    const readAt = Date.now();
    // lost_3 was claimed by a worker after the read.
    await env.notice.query("UPDATE notice_delivery_events SET status = 'delivering', updated_at_ms = ? WHERE source_event_id = 'lost_3'", [readAt + 5]);
    const keys = [1, 2, 3].map((n) => ({ sourceName: 'wallet_outbox', appCode: 'lalu', sourceEventId: `lost_${n}`, channel: CHANNEL_TENCENT_IM_C2C }));
    await ledger.markRequeued(keys, readAt, readAt + 10);
    const [one, two, three] = await Promise.all(keys.map((k) => ledger.get(k)));
    expect(one).toMatchObject({ status: 'pending', updatedAtMs: readAt + 10 });
    expect(two).toMatchObject({ status: 'retryable', updatedAtMs: readAt + 10, nextRetryAtMs: readAt + 10 });
    expect(three).toMatchObject({ status: 'delivering', updatedAtMs: readAt + 5 });
  });
});
