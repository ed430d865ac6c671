import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { jobCounts, queueActivity, startPipeline } from './helpers/pipeline.ts';
import { addFollowUps, deliverJobId, enqueueDeliveries, EVENTS_STREAM_MAX_LEN } from '../queues/deliver-queue.ts';
import { CHANNEL_TENCENT_IM_C2C } from '../src/ledger/types.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let procs: NoticeProcess[] = [];
afterEach(async () => {
  for (const p of procs) await p.stop();
  procs = [];
  await env?.close();
  env = undefined;
});

// The reconciler is driven by hand (runOnce) so that a pass happens exactly when the test says.
const manualReconciler = { reconciler: { enabled: false, interval: '300ms', pending_grace: '500ms', batch_size: 100 } };

async function batchIds(env: TestEnv): Promise<Array<string | null>> {
  const [rows] = await env.notice.query<any[]>('SELECT batch_job_id FROM notice_delivery_events ORDER BY source_row_id');
  return rows.map((r) => r.batch_job_id);
}

function keyOf(n: number) {
  const row = balanceChanged(n);
  return { sourceName: 'wallet_outbox', appCode: 'lalu', sourceEventId: row.event_id!, channel: CHANNEL_TENCENT_IM_C2C };
}

describe('batch jobs (deliver.rows_per_job)', () => {
  it('carries an ingest batch in jobs of up to rows_per_job rows, each row recording its job, and sends each row once', async () => {
    env = await createTestEnv({ deliver: { rows_per_job: 16 }, wallet_notice_worker: { batch_size: 100 } });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 40 }, (_, i) => balanceChanged(i + 1)),
    );
    const ingest = await startPipeline(env.config, ['ingest']);
    procs.push(ingest);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.pending === 40,
      10_000,
      '40 pending',
    );
    const ids = await batchIds(env);
    // One poll read all 40: jobs of 16, 16 and 8, in outbox order.
    expect(new Set(ids).size).toBe(3);
    expect(ids.every((id) => id !== null && id.startsWith('wallet_outbox-b-'))).toBe(true);
    expect(ids.filter((id) => id === ids[0])).toHaveLength(16);
    expect(await jobCounts(ingest)).toBe(3);

    procs.push(await startPipeline(env.config, ['deliver']));
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 40,
      15_000,
      '40 delivered',
    );
    expect(env.fakeIm.messages()).toHaveLength(40);
    // Completed batch jobs are removed as they complete, like jobs of their own.
    await waitFor(
      () => jobCounts(ingest),
      (n) => n === 0,
      5000,
      'no jobs left',
    );
  });

  it('hands a row that needs a retry, or fails for good, on to a job of its own; the rest of the batch is done', async () => {
    env = await createTestEnv({ deliver: { rows_per_job: 16, retry_base_delay: '1s', retry_max_delay: '1s' } });
    // User 10002 answers a transient error once; user 10003 is not an IM account (a permanent answer).
    env.fakeIm.setFaults({ errors: [{ code: 70500, count: 1, to_account: '10002' }], not_imported: ['10003'] });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 10 }, (_, i) => balanceChanged(i + 1)),
    );
    const proc = await startPipeline(env.config);
    procs.push(proc);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 9 && c.failed === 1,
      15_000,
      '9 delivered, 1 failed',
    );
    expect(new Set(await batchIds(env)).size).toBe(1);
    const [rows] = await env.notice.query<any[]>('SELECT user_id, status, attempt_count FROM notice_delivery_events ORDER BY source_row_id');
    expect(rows.find((r) => String(r.user_id) === '10002')).toMatchObject({ status: 'delivered', attempt_count: 2 });
    // The dead letter is on the board as a failed job of the row's own, with the provider's answer.
    const queue = proc.queues.queueFor({ channel: CHANNEL_TENCENT_IM_C2C, noticeKind: 'wallet_notice', appCode: 'lalu' });
    const failed = await queue.getFailed();
    expect(failed).toHaveLength(1);
    expect(failed[0]!.id).toBe(deliverJobId(keyOf(3)));
    expect(failed[0]!.name).toContain('user 10003');
    expect(failed[0]!.failedReason).toMatch(/tencent_im_c2c/i);
    // Nothing was sent twice: 9 accepted messages, one per delivered row.
    const accepted = env.fakeIm.messages();
    expect(accepted).toHaveLength(9);
    expect(new Set(accepted.map((m) => JSON.parse(m.data).event_id)).size).toBe(9);
  });

  it('a dead letter added after its row was requeued (and delivered) completes instead of showing a failure', async () => {
    env = await createTestEnv({ deliver: { rows_per_job: 16 } });
    env.fakeIm.setFaults({ not_imported: ['10003'] });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 3 }, (_, i) => balanceChanged(i + 1)),
    );
    const proc = await startPipeline(env.config);
    procs.push(proc);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 2 && c.failed === 1,
      15_000,
      '2 delivered, 1 failed',
    );
    await waitFor(
      () => queueActivity(proc),
      (c) => c.moving === 0 && c.failed === 1,
      10_000,
      'the dead letter in place',
    );
    // The batch's hand-off arriving late: row 1 was failed when the batch finished it, an operator requeued it, and
    // it was delivered before the batch added its dead letter (the requeue's job, completed, is gone).
    const queue = proc.queues.queueFor({ channel: CHANNEL_TENCENT_IM_C2C, noticeKind: 'wallet_notice', appCode: 'lalu' });
    const late = { ...keyOf(1), eventType: 'WalletBalanceChanged', noticeKind: 'wallet_notice', userId: '10001' };
    await addFollowUps(queue, [{ row: late, maxRetryCount: 3, delayMs: 0, deadLetter: 'tencent_im_c2c 20003: not an IM account' }]);
    await waitFor(
      async () => (await queue.getJobCounts('wait', 'active', 'completed')) as Record<string, number>,
      (c) => c.wait === 0 && c.active === 0,
      10_000,
      'the late dead letter processed',
    );
    const failed = await queue.getFailed();
    expect(failed.map((j) => j.id)).toEqual([deliverJobId(keyOf(3))]);
    expect(await queue.getJob(deliverJobId(keyOf(1)))).toBeUndefined();
    expect(env.fakeIm.messages()).toHaveLength(2);
  });

  it('a batch job run again after a failed hand-off leaves a row waiting for its retry until it is due', async () => {
    env = await createTestEnv({ deliver: { rows_per_job: 16, retry_base_delay: '1s', retry_max_delay: '1s' } });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 3 }, (_, i) => balanceChanged(i + 1)),
    );
    const ingest = await startPipeline(env.config, ['ingest']);
    procs.push(ingest);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.pending === 3,
      10_000,
      '3 pending',
    );
    expect(await jobCounts(ingest)).toBe(1);
    // As the batch's first run leaves it when its hand-off fails: row 2 recorded retryable (attempt 1, due in 2.5 s)
    // with no job of its own, and the batch job run again with all three rows.
    const dueAt = Date.now() + 2500;
    await env.notice.query(
      "UPDATE notice_delivery_events SET status = 'retryable', attempt_count = 1, claim_count = 1, next_retry_at_ms = ?, last_error_code = '70500' WHERE source_event_id = ?",
      [dueAt, keyOf(2).sourceEventId],
    );
    procs.push(await startPipeline(env.config, ['deliver']));
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 3,
      15_000,
      '3 delivered',
    );
    const toRow2 = env.fakeIm.messages().filter((m) => m.toAccount === '10002');
    expect(toRow2).toHaveLength(1);
    expect(toRow2[0]!.receivedAtMs).toBeGreaterThanOrEqual(dueAt);
    const [rows] = await env.notice.query<any[]>('SELECT attempt_count FROM notice_delivery_events WHERE source_event_id = ?', [keyOf(2).sourceEventId]);
    expect(rows[0].attempt_count).toBe(2);
    expect(env.fakeIm.messages()).toHaveLength(3);
  });

  it('the reconciler counts rows of a live batch job as queued, and gives them jobs of their own once it is lost', async () => {
    env = await createTestEnv({ ...manualReconciler, deliver: { rows_per_job: 16 } });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 20 }, (_, i) => balanceChanged(i + 1)),
    );
    const ingest = await startPipeline(env.config, ['ingest']);
    procs.push(ingest);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.pending === 20,
      10_000,
      '20 pending',
    );
    // Every row is past the pending grace, as in a backlog that waits longer than it.
    await env.notice.query('UPDATE notice_delivery_events SET updated_at_ms = updated_at_ms - 60000');
    // Paused queues: the batch jobs stay waiting while the reconciler looks.
    await Promise.all(ingest.queues.all.map((q) => q.pause()));
    const deliver = await startPipeline(env.config, ['deliver']);
    procs.push(deliver);
    const first = await deliver.deliver!.reconciler!.runOnce();
    expect(first).toMatchObject({ stranded: 20, requeued: 0, live: 20 });
    expect(await jobCounts(deliver)).toBe(2);

    // Redis loses one batch job (16 rows): those rows get jobs of their own, the other batch's 4 stay where they are.
    const ids = await batchIds(env);
    const queue = deliver.queues.queueFor({ channel: CHANNEL_TENCENT_IM_C2C, noticeKind: 'wallet_notice', appCode: 'lalu' });
    await env.redis.lrem(queue.toKey('wait'), 0, ids[0]!);
    await env.redis.del(queue.toKey(ids[0]!));
    const second = await deliver.deliver!.reconciler!.runOnce();
    expect(second).toMatchObject({ stranded: 20, requeued: 16, live: 4 });
    expect(await queue.getJobState(deliverJobId(keyOf(1)))).toMatch(/^(waiting|paused)$/);
    expect(await queue.getJobState(ids[16]!)).toMatch(/^(waiting|paused)$/);

    await Promise.all(deliver.queues.all.map((q) => q.resume()));
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 20,
      15_000,
      '20 delivered',
    );
    expect(env.fakeIm.messages()).toHaveLength(20);
  });

  it('sends a row once when a batch job and a job of its own carry it in the same process at the same time', async () => {
    env = await createTestEnv({ ...manualReconciler, deliver: { rows_per_job: 16 } });
    env.fakeIm.setFaults({ delay_ms: 300 });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 8 }, (_, i) => balanceChanged(i + 1)),
    );
    const ingest = await startPipeline(env.config, ['ingest']);
    procs.push(ingest);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.pending === 8,
      10_000,
      '8 pending',
    );
    // The reconciler's re-add after a Redis loss that had not really happened: every row also has a job of its own.
    await enqueueDeliveries(
      ingest.queues,
      Array.from({ length: 8 }, (_, i) => ({ key: keyOf(i + 1), eventType: 'WalletBalanceChanged', noticeKind: 'wallet_notice', maxRetryCount: 3 })),
    );
    expect(await jobCounts(ingest)).toBe(9);
    procs.push(await startPipeline(env.config, ['deliver']));
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 8,
      15_000,
      '8 delivered',
    );
    await waitFor(
      () => jobCounts(ingest),
      (n) => n === 0,
      10_000,
      'every copy finished',
    );
    expect(env.fakeIm.messages()).toHaveLength(8);
  });

  it("keeps BullMQ's events stream (read by no one here) at about EVENTS_STREAM_MAX_LEN entries per queue", async () => {
    env = await createTestEnv({ ...manualReconciler });
    const ingest = await startPipeline(env.config, ['ingest']);
    procs.push(ingest);
    const queue = ingest.queues.queueFor({ channel: CHANNEL_TENCENT_IM_C2C, noticeKind: 'wallet_notice', appCode: 'lalu' });
    await queue.waitUntilReady();
    // Each add writes two entries (added, waiting): 1,500 jobs would leave 3,000 under BullMQ's default of 10,000.
    await enqueueDeliveries(
      ingest.queues,
      Array.from({ length: 1500 }, (_, i) => ({ key: keyOf(i + 1), eventType: 'WalletBalanceChanged', noticeKind: 'wallet_notice', maxRetryCount: 3 })),
    );
    expect(await env.redis.hget(queue.toKey('meta'), 'opts.maxLenEvents')).toBe(String(EVENTS_STREAM_MAX_LEN));
    // MAXLEN ~ trims whole stream nodes (100 entries each), so a little over the bound stays.
    expect(await env.redis.xlen(queue.toKey('events'))).toBeLessThanOrEqual(EVENTS_STREAM_MAX_LEN + 200);
  });
});
