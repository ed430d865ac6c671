import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
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

const fast = { reconciler: { interval: '300ms', pending_grace: '500ms', batch_size: 100 } };

async function deleteQueueKeys(env: TestEnv): Promise<number> {
  let cursor = '0';
  let n = 0;
  do {
    const [next, keys] = await env.redis.scan(cursor, 'MATCH', `${env.config.redis.prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) n += await env.redis.del(...keys);
  } while (cursor !== '0');
  return n;
}

function pendingRow(n: number) {
  return {
    sourceName: 'wallet_outbox',
    appCode: 'lalu',
    sourceEventId: `crash_${n}`,
    channel: CHANNEL_TENCENT_IM_C2C,
    eventType: 'WalletBalanceChanged',
    userId: String(40000 + n),
    noticeKind: 'wallet_notice',
    status: 'pending' as const,
    payload: JSON.stringify({ event_id: `crash_${n}` }),
    lastErrorCode: null,
    lastError: null,
    sourceRowId: n,
    sourceCreatedAtMs: Date.now(),
  };
}

describe('recovery: MySQL is the truth, Redis can be lost', () => {
  it('re-enqueues rows whose ingest crashed between the ledger insert and the enqueue', async () => {
    env = await createTestEnv(fast);
    await new LedgerRepository(env.notice).insertIfAbsent(
      Array.from({ length: 20 }, (_, i) => pendingRow(i)),
      Date.now() - 1000,
    );
    const proc = await startPipeline(env.config, ['deliver']);
    procs.push(proc);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 20,
      15_000,
      'reconciled deliveries',
    );
    expect(env.fakeIm.messages()).toHaveLength(20);
  });

  it('recovers every event after the queue keys are wiped mid-run (Redis restarted empty / FLUSHALL)', async () => {
    env = await createTestEnv({ ...fast, deliver: { concurrency: 4 } });
    env.fakeIm.setFaults({ delay_ms: 30 });
    const proc = await startPipeline(env.config);
    procs.push(proc);
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 300 }, (_, i) => balanceChanged(i + 1)),
    );
    await waitFor(
      async () => env!.fakeIm.messages().length,
      (n) => n >= 30,
      15_000,
    );
    const deleted = await deleteQueueKeys(env);
    expect(deleted).toBeGreaterThan(0);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 300,
      30_000,
      'all delivered after the wipe',
    );
    // A resend is possible only for sends in flight at the wipe; Tencent's duplicate filter drops those.
    expect(env.fakeIm.delivered()).toHaveLength(300);
    expect(env.fakeIm.messages().length - 300).toBeLessThanOrEqual(4);
    const metrics = await proc.metrics.render();
    expect(metrics).toMatch(/notice_reconciler_requeued_total\{status="pending"\} [1-9]/);
  });

  it('re-enqueues a retryable event whose delayed job was removed by hand', async () => {
    env = await createTestEnv({ ...fast, deliver: { retry_base_delay: '2s', retry_max_delay: '2s' } });
    env.fakeIm.setFaults({ errors: [{ code: 70500, count: 1 }] });
    const proc = await startPipeline(env.config);
    procs.push(proc);
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1)]);
    const key = { sourceName: 'wallet_outbox', appCode: 'lalu', sourceEventId: 'tx_1:WalletBalanceChanged:10001:COIN', channel: CHANNEL_TENCENT_IM_C2C };
    await waitFor(
      async () => (await proc.queues.getJob({ ...key, noticeKind: 'wallet_notice' }))?.getState(),
      (s) => s === 'delayed',
      10_000,
      'delayed retry',
    );
    await (await proc.queues.getJob({ ...key, noticeKind: 'wallet_notice' }))!.remove();
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 1,
      15_000,
      'delivered after the job was removed',
    );
    expect((await new LedgerRepository(env.notice).get(key))!.attemptCount).toBe(2);
  });

  it('fails an event as poison when its sends keep starting but never finish', async () => {
    env = await createTestEnv({ ...fast, deliver: { max_unfinished_attempts: 3 } });
    const ledger = new LedgerRepository(env.notice);
    await ledger.insertIfAbsent([pendingRow(1)], Date.now() - 1000);
    // Three earlier claims that never recorded an outcome: three workers died mid-send.
    await env.notice.query("UPDATE notice_delivery_events SET claim_count = 3 WHERE source_event_id = 'crash_1'");
    procs.push(await startPipeline(env.config, ['deliver']));
    const row = await waitFor(
      () => ledger.get({ sourceName: 'wallet_outbox', appCode: 'lalu', sourceEventId: 'crash_1', channel: CHANNEL_TENCENT_IM_C2C }),
      (r) => r?.status === 'failed',
      15_000,
    );
    expect(row!.lastErrorCode).toBe('POISON');
    expect(row!.lastError).toContain('3 sends started but never finished');
    expect(env.fakeIm.getStats().requests).toBe(0);
  });

  it('purges only final rows past retention, in bounded batches', async () => {
    // Passes are driven by hand: with the timer on, a loaded machine may run one before the test takes over.
    env = await createTestEnv({ reconciler: { enabled: false, pending_grace: '500ms' }, retention: { delivered: '1h', failed: '2h', purge_batch_size: 2 } });
    const ledger = new LedgerRepository(env.notice);
    const old = Date.now() - 3 * 3600_000;
    await ledger.insertIfAbsent(
      Array.from({ length: 9 }, (_, i) => pendingRow(i)),
      old,
    );
    const set = (status: string, ids: number[], updated: number) =>
      env!.notice.query(
        `UPDATE notice_delivery_events SET status = ?, updated_at_ms = ?, lock_until_ms = ? WHERE source_event_id IN (${ids.map(() => '?').join(',')})`,
        [status, updated, Date.now() + 3600_000, ...ids.map((i) => `crash_${i}`)],
      );
    await set('delivered', [0, 1, 2], old);
    await set('delivered', [3], Date.now()); // recent: kept
    await set('failed', [4], old);
    await set('retryable', [5], old);
    await set('delivering', [6], old); // lock still live
    await set('failed', [7], Date.now() - 1.5 * 3600_000); // younger than failed retention: kept
    // crash_8 stays pending (old): the reconciler sends it, it is never purged while in flight.
    // History older than retention.delivered goes too; a recent entry stays.
    await env.notice.query(
      "INSERT INTO notice_delivery_history (source_name, app_code, source_event_id, channel, at_ms, event, actor) VALUES ('wallet_outbox', 'lalu', 'crash_0', 'tencent_im_c2c', ?, 'retryable', 'w'), ('wallet_outbox', 'lalu', 'crash_5', 'tencent_im_c2c', ?, 'retryable', 'w')",
      [old, Date.now()],
    );
    const proc = await startPipeline(env.config, ['deliver']);
    procs.push(proc);
    const reconciler = proc.deliver!.reconciler!;
    const first = await reconciler.runOnce();
    expect(first.purged).toBe(3); // 2 delivered (batch size) + 1 failed
    await reconciler.runOnce();
    const [rows] = await env.notice.query<any[]>('SELECT source_event_id, status FROM notice_delivery_events ORDER BY source_event_id');
    expect(rows.map((r) => r.source_event_id)).toEqual(['crash_3', 'crash_5', 'crash_6', 'crash_7', 'crash_8']);
    const [history] = await env.notice.query<any[]>('SELECT source_event_id FROM notice_delivery_history ORDER BY id');
    expect(history.map((h) => h.source_event_id)).toEqual(['crash_5']);
  });
});
