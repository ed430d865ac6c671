import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { insertWalletRows, ledgerStatusCounts, vipActivated, type WalletRow } from './helpers/outbox.ts';
import { insertRoomRows, kick } from './helpers/room.ts';
import { startPipeline } from './helpers/pipeline.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { BatchedLedger } from '../src/ledger/batched-ledger.ts';
import { CHANNEL_TENCENT_IM_C2C } from '../src/ledger/types.ts';
import { inspectEvent } from '../src/ops/cli-ops.ts';

let env: TestEnv | undefined;
let procs: NoticeProcess[] = [];

afterEach(async () => {
  for (const p of procs) await p.stop();
  procs = [];
  await env?.close();
  env = undefined;
});

const SKIP_ON = {
  deliver: { skip_superseded: { WalletBalanceChanged: true } },
  dashboard: { port: 0, auth: { enabled: false }, environment: { label: 'local', color: '#2e7d32' } },
};

function balance(user: string, version: number, asset = 'COIN'): WalletRow {
  return {
    app_code: 'lalu',
    event_id: `bal_${user}_${asset}_${version}`,
    event_type: 'WalletBalanceChanged',
    user_id: user,
    created_at_ms: Date.now(),
    payload: JSON.stringify({
      transaction_id: `t_${user}_${version}`,
      command_id: 'c',
      asset_type: asset,
      available_delta: 1,
      frozen_delta: 0,
      available_after: version,
      frozen_after: 0,
      balance_version: version,
    }),
  };
}

const keyOf = (eventId: string) => ({ sourceName: 'wallet_outbox', appCode: 'lalu', sourceEventId: eventId, channel: CHANNEL_TENCENT_IM_C2C });

describe('superseded balance notices', () => {
  it('finds the newest version of the same app, user and asset that is sent or on its way, and nothing else', async () => {
    env = await createTestEnv({ ...SKIP_ON, wallet_notice_worker: { enabled: true } });
    // Ingest only: the rows stay pending for the ledger-level checks.
    procs.push(await startPipeline(env.config, ['ingest']));
    await insertWalletRows(env.owner, env.config.wallet_database, [
      balance('u1', 1),
      balance('u1', 2),
      balance('u1', 3),
      balance('u1', 4, 'DIAMOND'),
      balance('u2', 9),
      balance('u3', 1),
      balance('u3', 2),
    ]);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.pending === 7,
      10_000,
      'seven pending rows',
    );
    // u3's newer version failed (it never reached the user): it supersedes nothing.
    await env.notice.query("UPDATE notice_delivery_events SET status = 'failed' WHERE source_event_id = 'bal_u3_COIN_2'");
    const repo = new LedgerRepository(env.notice);
    const hot = new BatchedLedger(env.notice, 'worker-a', () => 30_000);
    const newer = async (id: string) => hot.newerVersion((await repo.get(keyOf(id)))!);
    expect(await Promise.all(['bal_u1_COIN_1', 'bal_u1_COIN_2', 'bal_u1_COIN_3', 'bal_u1_DIAMOND_4', 'bal_u2_COIN_9', 'bal_u3_COIN_1'].map(newer))).toEqual([
      'bal_u1_COIN_3',
      'bal_u1_COIN_3',
      null,
      null,
      null,
      null,
    ]);

    // Only the holder of the claim may finish a row as superseded, and the row says what replaced it.
    expect((await hot.claim(keyOf('bal_u1_COIN_1'))).claimed).toBe(true);
    expect(await new BatchedLedger(env.notice, 'worker-b', () => 30_000).recordSuperseded(keyOf('bal_u1_COIN_1'), 'bal_u1_COIN_3')).toBe(false);
    expect(await hot.recordSuperseded(keyOf('bal_u1_COIN_1'), 'bal_u1_COIN_3')).toBe(true);
    expect(await repo.get(keyOf('bal_u1_COIN_1'))).toMatchObject({
      status: 'superseded',
      supersededBy: 'bal_u1_COIN_3',
      lockedBy: null,
      supersedeVersion: '1',
    });
    // A VIP activation carries no version.
    await insertWalletRows(env.owner, env.config.wallet_database, [vipActivated(1)]);
    await waitFor(
      async () => repo.get(keyOf('wev_1')),
      (row) => row !== null,
      10_000,
      'vip row',
    );
    expect((await repo.get(keyOf('wev_1')))!.supersedeKey).toBeNull();
  });

  it('sends only what is not obsolete when its turn comes; inspect, the ledger API and the metrics show what replaced the rest', async () => {
    env = await createTestEnv(SKIP_ON);
    // A backlog built while no deliver process runs: five versions of u1's coins, one of u2's, a VIP activation.
    const ingest = await startPipeline(env.config, ['ingest']);
    procs.push(ingest);
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      [1, 2, 3, 4, 5].map((v) => balance('u1', v)),
    );
    await insertWalletRows(env.owner, env.config.wallet_database, [balance('u2', 1), vipActivated(7)]);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.pending === 7,
      10_000,
      'backlog in the ledger',
    );
    const deliver = await startPipeline(env.config, ['deliver', 'dashboard']);
    procs.push(deliver);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => (c.delivered ?? 0) + (c.superseded ?? 0) === 7,
      15_000,
      'backlog finished',
    );

    const sent = env.fakeIm
      .messages()
      .map((m) => JSON.parse(m.data).event_id)
      .sort();
    expect(sent).toEqual(['bal_u1_COIN_5', 'bal_u2_COIN_1', 'wev_7']);
    expect(await ledgerStatusCounts(env.notice)).toEqual({ delivered: 3, superseded: 4 });
    const [rows] = await env.notice.query<any[]>(
      "SELECT source_event_id, superseded_by FROM notice_delivery_events WHERE status = 'superseded' ORDER BY source_event_id",
    );
    expect(rows.map((r) => [r.source_event_id, r.superseded_by])).toEqual([1, 2, 3, 4].map((v) => [`bal_u1_COIN_${v}`, 'bal_u1_COIN_5']));

    const [inspected] = (await inspectEvent(env.config, 'bal_u1_COIN_2')) as Array<Record<string, unknown>>;
    expect(inspected).toMatchObject({ status: 'superseded', superseded_by: 'bal_u1_COIN_5', supersede_version: '2' });
    const api = await fetch(`http://127.0.0.1:${deliver.dashboard!.port}${env.config.dashboard.base_path}/api/notices?user_id=u1`);
    const found = ((await api.json()) as { rows: Array<Record<string, unknown>> }).rows;
    expect(found.filter((r) => r.status === 'superseded').map((r) => r.superseded_by)).toEqual(Array(4).fill('bal_u1_COIN_5'));
    const metrics = await deliver.metrics.registry.metrics();
    expect(metrics).toMatch(/notice_deliveries_total\{[^}]*notice_kind="wallet_notice",outcome="superseded"[^}]*\} 4/);
  });

  it('sends every version when skipping is off for the event type', async () => {
    env = await createTestEnv();
    expect(env.config.deliver.skip_superseded.WalletBalanceChanged).toBe(false);
    procs.push(await startPipeline(env.config, ['ingest']));
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      [1, 2, 3].map((v) => balance('u1', v)),
    );
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.pending === 3,
      10_000,
      'backlog',
    );
    procs.push(await startPipeline(env.config, ['deliver']));
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 3,
      15_000,
      'all three delivered',
    );
    expect(env.fakeIm.messages()).toHaveLength(3);
  });
});

describe('priority by notice kind', () => {
  /** A 20/s limit, 60 balance notices queued (3 s of quota), then one kick: where in the send order does it land? */
  async function kickPosition(priority: Record<string, string> | undefined): Promise<number> {
    env = await createTestEnv({
      tencent_im: { rate_limit_per_second: 20 },
      room_notice_worker: { enabled: true, poll_interval: '50ms', batch_size: 100, lock_ttl: '30s', max_retry_count: 3, gap_grace: '5s' },
      deliver: { concurrency: 8, job_lock_duration: '30s', ...(priority ? { priority } : {}) },
      wallet_notice_worker: { lock_ttl: '30s' },
    });
    procs.push(await startPipeline(env.config, ['ingest']));
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 60 }, (_, i) => balance(`w${i}`, 1)),
    );
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.pending === 60,
      10_000,
      'wallet backlog',
    );
    procs.push(await startPipeline(env.config, ['deliver']));
    await waitFor(
      async () => env!.fakeIm.messages().length,
      (n) => n >= 3,
      10_000,
      'sending started',
    );
    await insertRoomRows(env.owner, env.config.room_database, [{ ...kick(1), created_at_ms: Date.now() }]);
    await waitFor(
      async () => env!.fakeIm.messages().length,
      (n) => n === 61,
      20_000,
      'everything sent',
    );
    const order = env.fakeIm.messages().map((m) => m.ext);
    const position = order.indexOf('room_notice');
    for (const p of procs) await p.stop();
    procs = [];
    await env.close();
    env = undefined;
    return position;
  }

  it('a kick committed behind a balance backlog jumps it; with priorities off it waits its turn', async () => {
    const shipped = await kickPosition(undefined);
    const fifo = await kickPosition({});
    // Shipped: the kick goes within the next few slots (the claimed sends already holding one); FIFO: last.
    expect(shipped).toBeLessThan(20);
    expect(fifo).toBe(60);
  });
});
