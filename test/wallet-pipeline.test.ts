import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts, vipActivated } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { inspectEvent } from '../src/ops/cli-ops.ts';

let env: TestEnv;
let procs: NoticeProcess[] = [];

afterEach(async () => {
  for (const p of procs) await p.stop();
  procs = [];
  await env?.close();
});

async function ledgerRow(eventId: string) {
  const [rows] = await env.notice.query<any[]>('SELECT * FROM notice_delivery_events WHERE source_event_id = ?', [eventId]);
  return rows[0];
}

describe('wallet notices end to end (MariaDB + Redis + fake-im)', () => {
  it('delivers N outbox rows as N C2C messages, once each, with the right Ext and payload', async () => {
    env = await createTestEnv();
    const rows = [...Array.from({ length: 150 }, (_, i) => balanceChanged(i + 1)), ...Array.from({ length: 20 }, (_, i) => vipActivated(i + 1))];
    await insertWalletRows(env.owner, env.config.wallet_database, rows);
    await insertWalletRows(env.owner, env.config.wallet_database, [{ event_id: 'other', event_type: 'WalletFrozen', user_id: '1', payload: '{}' }]);
    procs.push(await startPipeline(env.config));

    await waitFor(
      async () => env.fakeIm.delivered().length,
      (n) => n >= 170,
      30_000,
      '170 messages',
    );
    await waitFor(
      () => ledgerStatusCounts(env.notice),
      (c) => c.delivered === 170,
      10_000,
      'ledger delivered',
    );
    const messages = env.fakeIm.messages();
    expect(messages).toHaveLength(170);
    expect(messages.filter((m) => m.duplicate)).toHaveLength(0);
    expect(new Set(messages.map((m) => JSON.parse(m.data).event_id)).size).toBe(170);
    expect(messages.filter((m) => m.ext === 'wallet_notice')).toHaveLength(150);
    expect(messages.filter((m) => m.ext === 'vip_notice')).toHaveLength(20);

    const sample = messages.find((m) => JSON.parse(m.data).event_id === 'tx_7:WalletBalanceChanged:10007:COIN')!;
    expect(sample.toAccount).toBe('10007');
    const row = await ledgerRow('tx_7:WalletBalanceChanged:10007:COIN');
    expect(sample.data).toBe(row.payload);
    expect(row).toMatchObject({
      status: 'delivered',
      attempt_count: 1,
      user_id: '10007',
      notice_kind: 'wallet_notice',
      provider_ref: sample.msgKey,
      source_created_at_ms: 1710000000007,
    });
    expect(JSON.parse(sample.data)).toMatchObject({ event_type: 'WalletBalanceChanged', balance_version: 7, source_created_at_ms: 1710000000007 });
    // The unhandled event type was skipped and counted, not recorded.
    expect(procs[0]!.ingest!.pollers[0]!.stats.skipped).toBe(1);
    expect((await ledgerStatusCounts(env.notice)).failed).toBeUndefined();
  });

  it('keeps int64 balances exact from outbox to the IM message', async () => {
    env = await createTestEnv();
    await insertWalletRows(env.owner, env.config.wallet_database, [
      {
        event_id: 'big',
        event_type: 'WalletBalanceChanged',
        user_id: '10001',
        payload:
          '{"transaction_id":"t","command_id":"c","asset_type":"COIN","available_delta":9007199254740993,"frozen_delta":-9223372036854775808,"available_after":9223372036854775807,"frozen_after":0,"balance_version":9007199254740995}',
      },
    ]);
    procs.push(await startPipeline(env.config));
    await waitFor(
      async () => env.fakeIm.delivered().length,
      (n) => n === 1,
    );
    const data = env.fakeIm.delivered()[0]!.data;
    expect(data).toContain('"available_delta":9007199254740993');
    expect(data).toContain('"frozen_delta":-9223372036854775808');
    expect(data).toContain('"available_after":9223372036854775807');
    expect(data).toContain('"balance_version":9007199254740995');
  });

  it('retries transient faults (error codes, HTTP 5xx, dropped connections) and counts the attempts', async () => {
    env = await createTestEnv({ wallet_notice_worker: { max_retry_count: 5 } });
    env.fakeIm.setFaults({ errors: [{ code: 70500, count: 1, to_account: '10001' }], http_errors: 0 });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1)]);
    procs.push(await startPipeline(env.config));
    await waitFor(
      async () => (await ledgerRow('tx_1:WalletBalanceChanged:10001:COIN'))?.status,
      (s) => s === 'delivered',
    );
    expect(await ledgerRow('tx_1:WalletBalanceChanged:10001:COIN')).toMatchObject({ attempt_count: 2, last_error_code: null });

    env.fakeIm.setFaults({ http_errors: 1, drop_connections: 1, errors: [{ code: 20004, count: 1 }] });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(2)]);
    await waitFor(
      async () => (await ledgerRow('tx_2:WalletBalanceChanged:10002:COIN'))?.status,
      (s) => s === 'delivered',
    );
    expect((await ledgerRow('tx_2:WalletBalanceChanged:10002:COIN')).attempt_count).toBe(4);
    expect(env.fakeIm.delivered().filter((m) => m.toAccount === '10002')).toHaveLength(1);

    // The history keeps each attempt that did not deliver and the delivery that closed it; `inspect` shows the timeline.
    await waitFor(
      async () =>
        (
          await env.notice.query<any[]>("SELECT COUNT(*) AS n FROM notice_delivery_history WHERE source_event_id = 'tx_2:WalletBalanceChanged:10002:COIN'")
        )[0][0].n,
      (n) => Number(n) === 4,
      5_000,
      'history written',
    );
    const [history] = await env.notice.query<any[]>(
      "SELECT event, error_code FROM notice_delivery_history WHERE source_event_id = 'tx_2:WalletBalanceChanged:10002:COIN' ORDER BY at_ms, id",
    );
    expect(history.map((h) => h.event)).toEqual(['retryable', 'retryable', 'retryable', 'delivered']);
    expect(
      history
        .slice(0, 3)
        .map((h) => h.error_code)
        .sort(),
    ).toEqual(['20004', 'ECONNRESET', 'HTTP_502']);
    const [inspected] = (await inspectEvent(env.config, 'tx_2:WalletBalanceChanged:10002:COIN')) as Array<{ timeline: Array<{ event: string }> }>;
    expect(inspected!.timeline.map((s) => s.event)).toEqual(['recorded', 'retryable', 'retryable', 'retryable', 'delivered']);
    // A first-try success costs no history.
    const [first] = await env.notice.query<any[]>(
      "SELECT COUNT(*) AS n FROM notice_delivery_history WHERE event = 'delivered' AND source_event_id <> 'tx_2:WalletBalanceChanged:10002:COIN' AND source_event_id <> 'tx_1:WalletBalanceChanged:10001:COIN'",
    );
    expect(Number(first[0].n)).toBe(0);
  });

  it('fails a permanent error at once, without retries', async () => {
    env = await createTestEnv();
    env.fakeIm.setFaults({ not_imported: ['10003'] });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(3)]);
    procs.push(await startPipeline(env.config));
    const row = await waitFor(
      () => ledgerRow('tx_3:WalletBalanceChanged:10003:COIN'),
      (r) => r?.status === 'failed',
    );
    expect(row).toMatchObject({ attempt_count: 1, last_error_code: '90012' });
    await new Promise((r) => setTimeout(r, 500));
    expect(env.fakeIm.getStats().requests).toBe(1);
  });

  it('fails an event after max_retry_count retries: the dead letter stays in MySQL', async () => {
    env = await createTestEnv({ wallet_notice_worker: { max_retry_count: 2 } });
    env.fakeIm.setFaults({ errors: [{ code: 70500, count: 1000 }] });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(4)]);
    const proc = await startPipeline(env.config);
    procs.push(proc);
    const row = await waitFor(
      () => ledgerRow('tx_4:WalletBalanceChanged:10004:COIN'),
      (r) => r?.status === 'failed',
    );
    expect(row.attempt_count).toBe(3);
    expect(row.last_error_code).toBe('70500');
    expect(row.last_error).toMatch(/retries exhausted after 3 attempts/);
    await new Promise((r) => setTimeout(r, 500));
    expect(env.fakeIm.getStats().requests).toBe(3);
    const failedJobs = await proc.queues.queueFor({ channel: 'tencent_im_c2c', noticeKind: 'wallet_notice' }).getFailed();
    expect(failedJobs).toHaveLength(1);
    expect(failedJobs[0]!.data).toEqual({
      sourceName: 'wallet_outbox',
      appCode: 'lalu',
      sourceEventId: 'tx_4:WalletBalanceChanged:10004:COIN',
      channel: 'tencent_im_c2c',
      eventType: 'WalletBalanceChanged',
    });
  });

  it('re-signs on a signature-expired answer and delivers within the same attempt', async () => {
    env = await createTestEnv();
    env.fakeIm.setFaults({ errors: [{ code: 70001, count: 1 }] });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(5)]);
    procs.push(await startPipeline(env.config));
    const row = await waitFor(
      () => ledgerRow('tx_5:WalletBalanceChanged:10005:COIN'),
      (r) => r?.status === 'delivered',
    );
    expect(row.attempt_count).toBe(1);
    expect(env.fakeIm.getStats().requests).toBe(2);
  });

  it('backs the whole queue off on over-frequency without spending attempts', async () => {
    env = await createTestEnv({ wallet_notice_worker: { max_retry_count: 1 }, tencent_im: { rate_limit_per_second: 50 } });
    env.fakeIm.setFaults({ errors: [{ code: 60007, count: 5 }] });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 5 }, (_, i) => balanceChanged(100 + i)),
    );
    const proc = await startPipeline(env.config);
    procs.push(proc);
    await waitFor(
      () => ledgerStatusCounts(env.notice),
      (c) => c.delivered === 5,
      20_000,
    );
    // Five over-frequency answers but max_retry_count 1: only a rate limit that spends no attempt lets all five through.
    const [rows] = await env.notice.query<any[]>('SELECT attempt_count FROM notice_delivery_events');
    expect(rows.map((r) => r.attempt_count)).toEqual([1, 1, 1, 1, 1]);
    expect(proc.deliver!.outcomes.rate_limited).toBeGreaterThanOrEqual(1);
  });

  it('records malformed rows as failed with a reason and moves on', async () => {
    env = await createTestEnv();
    const good = balanceChanged(6);
    await insertWalletRows(env.owner, env.config.wallet_database, [
      { ...balanceChanged(7), user_id: null },
      { ...balanceChanged(8), payload: '[1,2,3]' },
      { ...balanceChanged(9), payload: balanceChanged(9).payload.replace('COIN', 'SHELLS') },
      { ...balanceChanged(10), payload: balanceChanged(10).payload.replace('"metadata":{"n":10}', `"metadata":{"s":"${'y'.repeat(13000)}"}`) },
      { ...balanceChanged(11), event_id: null },
      {
        ...balanceChanged(12),
        payload: balanceChanged(12).payload.replace('"metadata":{"n":12}', '"metadata":{"q":"\'; DROP TABLE notice_delivery_events; --"}'),
      },
      good,
    ]);
    procs.push(await startPipeline(env.config));
    await waitFor(
      () => ledgerStatusCounts(env.notice),
      (c) => c.delivered === 2 && c.failed === 5,
    );
    const [failed] = await env.notice.query<any[]>(
      "SELECT source_event_id, user_id, last_error_code, last_error FROM notice_delivery_events WHERE status = 'failed' ORDER BY source_row_id",
    );
    // The 13 KB one maps fine and fails on its C2C row, IM's limit, without a request to Tencent.
    expect(failed.map((r) => r.last_error_code)).toEqual(['MALFORMED', 'MALFORMED', 'MALFORMED', 'TOO_LARGE', 'MALFORMED']);
    expect(env.fakeIm.getStats().requests).toBe(2);
    expect(failed[0].last_error).toContain('user_id is missing');
    expect(failed[1].last_error).toContain('WalletBalanceChanged payload');
    expect(failed[2].last_error).toContain('asset_type');
    expect(failed[3].last_error).toContain('payload too large');
    expect(failed[4]).toMatchObject({ last_error: 'event_id is missing' });
    expect(failed[4].source_event_id).toMatch(/^wallet_outbox-row-\d+$/);
    // The SQL-looking string was data: delivered verbatim.
    expect(env.fakeIm.delivered().find((m) => m.toAccount === '10012')!.data).toContain('DROP TABLE notice_delivery_events');
  });
});

describe('waiting for a send slot', () => {
  it('gives the claim back unspent when the wait would outlast the ledger lock, and still delivers each event once', async () => {
    // 5/s paces a slot every ~211 ms; 20 claims at once reserve slots ~4 s deep, past half the 3 s lock.
    env = await createTestEnv({ tencent_im: { rate_limit_per_second: 5 } });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 20 }, (_, i) => balanceChanged(i + 1)),
    );
    procs.push(await startPipeline(env.config));
    // Some claims are given back while their slot is still far off (the ledger shows why).
    const givenBack = async () =>
      Number((await env.notice.query<any[]>("SELECT COUNT(*) AS n FROM notice_delivery_events WHERE last_error_code = 'SEND_SLOT_WAIT'"))[0][0].n);
    await waitFor(givenBack, (n) => n > 0, 10_000, 'a claim given back for SEND_SLOT_WAIT');

    await waitFor(
      () => ledgerStatusCounts(env.notice),
      (c) => c.delivered === 20,
      40_000,
      '20 delivered',
    );
    const messages = env.fakeIm.messages();
    expect(messages).toHaveLength(20);
    expect(new Set(messages.map((m) => JSON.parse(m.data).event_id)).size).toBe(20);
    const [rows] = await env.notice.query<any[]>('SELECT attempt_count, claim_count FROM notice_delivery_events');
    // No give-back spent an attempt or counted as an unfinished send.
    expect(rows.every((r) => r.attempt_count === 1 && r.claim_count === 1)).toBe(true);
    // Paced: no one-second span of arrivals holds more than the limit.
    const at = messages.map((m) => m.receivedAtMs).sort((a, b) => a - b);
    for (let i = 5; i < at.length; i++) expect(at[i]! - at[i - 5]!).toBeGreaterThanOrEqual(1000);
  });
});

describe('backpressure (max_queued_jobs)', () => {
  const ledgerCount = async () => Number((await env.notice.query<any[]>('SELECT COUNT(*) AS n FROM notice_delivery_events'))[0][0].n);

  it('leaves new rows in the outbox while the deliver queue is full, then delivers every one once', async () => {
    // The bound counts jobs; a job per row makes it a bound in rows here (with batch jobs, one job carries up to rows_per_job).
    env = await createTestEnv({ wallet_notice_worker: { max_queued_jobs: 30, batch_size: 20 }, deliver: { rows_per_job: 1 } });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 150 }, (_, i) => balanceChanged(i + 1)),
    );
    procs.push(await startPipeline(env.config, ['ingest'])); // no deliver yet: nothing drains the queue
    const poller = procs[0]!.ingest!.pollers[0]!;
    await waitFor(
      async () => poller.stats.backpressuredPolls,
      (n) => n >= 3,
      10_000,
      'ingest holding back',
    );
    const held = await ledgerCount();
    // It stopped at the first read that found the queue full: at least the limit, less than one batch more.
    expect(held).toBeGreaterThanOrEqual(30);
    expect(held).toBeLessThan(30 + 20);
    expect(poller.cursor!.highWaterId).toBe(held);
    await new Promise((r) => setTimeout(r, 300));
    expect(await ledgerCount()).toBe(held);

    procs.push(await startPipeline(env.config, ['deliver']));
    await waitFor(
      () => ledgerStatusCounts(env.notice),
      (c) => c.delivered === 150,
      30_000,
      '150 delivered',
    );
    const messages = env.fakeIm.messages();
    expect(messages).toHaveLength(150);
    expect(new Set(messages.map((m) => JSON.parse(m.data).event_id)).size).toBe(150);
  });

  it('still re-reads holes while holding back, so a late commit is not given up on', async () => {
    env = await createTestEnv({ wallet_notice_worker: { max_queued_jobs: 10, batch_size: 20, gap_grace: '30s' }, deliver: { rows_per_job: 1 } });
    const slow = await env.owner.getConnection();
    try {
      await slow.beginTransaction();
      await insertWalletRows(slow, env.config.wallet_database, [balanceChanged(1)]); // id 1, not yet committed
      await insertWalletRows(
        env.owner,
        env.config.wallet_database,
        Array.from({ length: 39 }, (_, i) => balanceChanged(i + 2)),
      );
      procs.push(await startPipeline(env.config, ['ingest']));
      const poller = procs[0]!.ingest!.pollers[0]!;
      await waitFor(
        async () => poller.stats.backpressuredPolls,
        (n) => n >= 2,
        10_000,
        'ingest holding back',
      );
      expect(poller.cursor).toMatchObject({ highWaterId: 21 });
      expect(poller.cursor!.gaps.map(([from, to]) => [from, to])).toEqual([[1, 1]]);
      await slow.commit();
      await waitFor(
        async () => poller.cursor?.gaps.length,
        (n) => n === 0,
        10_000,
        'the hole filled while held back',
      );
      const [rows] = await env.notice.query<any[]>('SELECT source_row_id FROM notice_delivery_events WHERE source_row_id = 1');
      expect(rows).toHaveLength(1);
      expect(poller.cursor!.highWaterId).toBe(21); // still no new rows read
    } finally {
      slow.release();
    }
  });
});
