import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, mysqlServerVia, MYSQL_HOST, MYSQL_PORT, waitFor, type TestEnv } from './helpers/env.ts';
import { TcpProxy } from './helpers/tcp-proxy.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { balanceChanged, insertWalletRows } from './helpers/outbox.ts';
import { activityEvent, insertActivityRows } from './helpers/activity.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

/**
 * What a MySQL failover to a lagging replica does to an outbox, played on one server behind a proxy (the VIP): the
 * connections are cut, and the "promoted" database lacks the last rows — the owner's next rows take their ids again —
 * or has outbox rows whose ledger rows it lacks. The whole scenario with real replication is the fault suite's.
 */
let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let vip: TcpProxy | undefined;
afterEach(async () => {
  await proc?.stop();
  await vip?.down();
  await env?.close();
  proc = env = vip = undefined;
});

/** C2C messages that reached a user: Tencent's duplicate filter drops a resend with the same MsgRandom and body. */
const shown = (e: TestEnv) => e.fakeIm.messages().filter((m) => !m.duplicate);

describe('an outbox failover to a replica that is behind', () => {
  it('ids handed out again below the cursor are read (not skipped), and facts recorded again are the same message: 0 lost, 0 shown twice', async () => {
    vip = new TcpProxy(MYSQL_HOST, MYSQL_PORT);
    await vip.start();
    env = await createTestEnv(
      { wallet_notice_worker: { enabled: true, poll_interval: '50ms', batch_size: 100, lock_ttl: '3s', gap_grace: '5s', max_retry_count: 3 } },
      { mysqlServerForService: mysqlServerVia(vip.port) },
    );
    const wallet = `\`${env.config.wallet_database}\`.wallet_outbox`;
    // 40 facts for 40 users, delivered.
    const fact = (n: number) => ({ ...balanceChanged(n), user_id: String(20_000 + n), event_id: `fo_${n}` });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 40 }, (_, i) => fact(i + 1)),
    );
    proc = await startPipeline(env.config);
    await waitFor(
      async () => shown(env!).length,
      (n) => n === 40,
      20_000,
      '40 delivered',
    );

    // The primary dies: the VIP cuts every connection. The replica promoted in its place lacks outbox rows 31..40
    // (its SQL thread was behind); the owner's writes go on there and take ids 31.. again.
    const poller = proc.ingest!.pollers[0]!;
    const failedPolls = poller.stats.errors;
    await vip.down();
    await env.owner.query(`DELETE FROM ${wallet} WHERE id > 30`);
    await env.owner.query(`ALTER TABLE ${wallet} AUTO_INCREMENT = 31`);
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 20 }, (_, i) => fact(100 + i)),
    );
    const [ids] = await env.owner.query<any[]>(`SELECT MIN(id) AS lo, MAX(id) AS hi FROM ${wallet} WHERE event_id LIKE 'fo\\_1__'`);
    expect([Number(ids[0].lo), Number(ids[0].hi)]).toEqual([31, 50]);
    // A failover is seen as failed polls (however slowly this machine polls): wait for one before the VIP comes back.
    await waitFor(
      async () => poller.stats.errors,
      (n) => n > failedPolls,
      30_000,
      'ingest seeing the primary gone',
    );
    await vip.up();
    // Every new fact reaches its user: none sits below a cursor that stayed where the old primary was.
    await waitFor(
      async () => shown(env!).length,
      (n) => n >= 60,
      30_000,
      'the 20 facts written after the promotion delivered',
    );
    expect(new Set(shown(env).map((m) => m.toAccount)).size).toBe(60);
    const rewound = (await proc.metrics.outboxRewound.get()).values.reduce((n, v) => n + v.value, 0);
    expect(rewound).toBe(1);

    // Another promotion: this replica has outbox rows 41..50 but not their ledger rows (the ledger's writes came
    // later), and its cursor is where that ledger was. The facts are recorded again and sent again — as the same
    // message, which Tencent's filter drops: nobody sees one twice.
    await vip.down();
    // (Straight to the server: the VIP is down, and env.notice goes through it.)
    const notice = `\`${env.id}_notice\``;
    await env.owner.query(`DELETE FROM ${notice}.notice_delivery_events WHERE source_event_id IN (?)`, [Array.from({ length: 10 }, (_, i) => `fo_${110 + i}`)]);
    await env.owner.query(`UPDATE ${notice}.notice_ingest_cursors SET high_water_id = 40, open_gaps = ?, high_water_row = NULL`, ['[]']);
    const failedAgain = poller.stats.errors;
    await waitFor(
      async () => poller.stats.errors,
      (n) => n > failedAgain,
      30_000,
      'ingest seeing the second primary gone',
    );
    await vip.up();
    await waitFor(
      async () => env!.fakeIm.messages().length,
      (n) => n >= 70,
      30_000,
      'the 10 facts recorded again and resent',
    );
    await waitFor(
      async () => Number((await env!.notice.query<any[]>("SELECT COUNT(*) AS n FROM notice_delivery_events WHERE status = 'delivered'"))[0][0].n),
      (n) => n === 60,
      30_000,
      'every ledger row delivered',
    );
    // The 10 facts recorded again were sent again, and every resend — these, and any delivery cut mid-way by the VIP
    // going down on a loaded machine — was the same message, dropped by the filter: each user saw their notice once.
    const resends = env.fakeIm.messages().filter((m) => m.duplicate);
    expect(resends.length).toBeGreaterThanOrEqual(10);
    for (let i = 0; i < 10; i++) expect(resends.some((m) => m.toAccount === String(20_000 + 110 + i))).toBe(true);
    expect(shown(env)).toHaveLength(60);
    expect(new Set(shown(env).map((m) => m.toAccount)).size).toBe(60);
    console.log(`[outbox-failover] resends, all filtered as duplicates: ${resends.length}`);
  }, 120_000);
  it('a server swapped under an open pool (no query fails) is caught by the next read, on the outbox and on the ledger side', async () => {
    env = await createTestEnv({
      wallet_notice_worker: { enabled: true, poll_interval: '50ms', batch_size: 100, lock_ttl: '3s', gap_grace: '5s', max_retry_count: 3 },
    });
    const wallet = `\`${env.config.wallet_database}\`.wallet_outbox`;
    const fact = (n: number) => ({ ...balanceChanged(n), user_id: String(30_000 + n), event_id: `sw_${n}` });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 40 }, (_, i) => fact(i + 1)),
    );
    proc = await startPipeline(env.config);
    await waitFor(
      async () => shown(env!).length,
      (n) => n === 40,
      20_000,
      '40 delivered',
    );
    const poller = proc.ingest!.pollers[0]!;
    const failedPolls = poller.stats.errors;

    // The outbox side: rows 31..40 gone and their ids handed out again, while the pool's connections stay open.
    await env.owner.query(`DELETE FROM ${wallet} WHERE id > 30`);
    await env.owner.query(`ALTER TABLE ${wallet} AUTO_INCREMENT = 31`);
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 20 }, (_, i) => fact(100 + i)),
    );
    await waitFor(
      async () => shown(env!).length,
      (n) => n >= 60,
      30_000,
      'the 20 facts written after the swap delivered',
    );
    expect(new Set(shown(env).map((m) => m.toAccount)).size).toBe(60);
    expect(poller.stats.errors).toBe(failedPolls); // no failed query told it
    expect((await proc.metrics.outboxRewound.get()).values.reduce((n, v) => n + v.value, 0)).toBeGreaterThanOrEqual(1);

    // The ledger side: the cursor row and the last ten ledger rows are older than what this process saved (the
    // notice database failed over alone). The next save is refused, the cursor re-read, the ten facts recorded again
    // and resent as the same messages, which the filter drops; a new fact is delivered.
    await env.owner.query(`DELETE FROM \`${env.id}_notice\`.notice_delivery_events WHERE source_event_id IN (?)`, [
      Array.from({ length: 10 }, (_, i) => `sw_${110 + i}`),
    ]);
    const [[{ hw }]] = await env.owner.query<any[]>(`SELECT id AS hw FROM ${wallet} WHERE event_id = 'sw_109'`);
    const [[{ row }]] = await env.owner.query<any[]>(
      `SELECT high_water_row AS \`row\` FROM \`${env.id}_notice\`.notice_ingest_cursors WHERE source_name = 'wallet_outbox'`,
    );
    expect(row).not.toBeNull();
    await env.owner.query(
      `UPDATE \`${env.id}_notice\`.notice_ingest_cursors SET high_water_id = ?, high_water_row = NULL WHERE source_name = 'wallet_outbox'`,
      [hw],
    );
    await insertWalletRows(env.owner, env.config.wallet_database, [fact(200)]);
    await waitFor(
      async () => shown(env!).length,
      (n) => n >= 61,
      30_000,
      'the new fact delivered',
    );
    await waitFor(
      async () => env!.fakeIm.messages().filter((m) => m.duplicate).length,
      (n) => n >= 10,
      30_000,
      'the ten facts recorded again and resent, as duplicates',
    );
    expect(shown(env)).toHaveLength(61);
    expect(poller.stats.errors).toBe(failedPolls);
  }, 120_000);
});

describe('a push whose ledger row a failover lost', () => {
  it('is recorded again but not pushed again: the resend guard in Redis remembers accepted pushes', async () => {
    env = await createTestEnv({
      wallet_notice_worker: { enabled: false },
      activity_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s', max_retry_count: 3 },
      tencent_push: { enabled: true, batch_linger: '0ms' },
    });
    const facts = (from: number, count: number) =>
      insertActivityRows(
        env!.owner,
        env!.config.activity_database,
        Array.from({ length: count }, (_, i) => ({ ...activityEvent(from + i), user_id: String(40_000 + from + i) })),
      );
    const pushedAccounts = () => env!.fakeIm.pushes().reduce((n, p) => n + p.accounts.length, 0);
    await facts(1, 5);
    proc = await startPipeline(env.config);
    await waitFor(
      async () => pushedAccounts(),
      (n) => n === 5,
      20_000,
      '5 pushes',
    );
    await waitFor(
      async () => Number((await env!.notice.query<any[]>("SELECT COUNT(*) AS n FROM notice_delivery_events WHERE status = 'delivered'"))[0][0].n),
      (n) => n === 10,
      20_000,
      '5 facts × (C2C, push) delivered',
    );
    // The notice database fails over to a replica that has none of it: no ledger rows, the cursor at the start.
    await env.notice.query('DELETE FROM notice_delivery_events');
    await env.notice.query("UPDATE notice_ingest_cursors SET high_water_id = 0, open_gaps = '[]', high_water_row = NULL WHERE source_name = 'activity_outbox'");
    await facts(6, 1);
    await waitFor(
      async () => Number((await env!.notice.query<any[]>("SELECT COUNT(*) AS n FROM notice_delivery_events WHERE status = 'delivered'"))[0][0].n),
      (n) => n === 12,
      30_000,
      '6 facts × (C2C, push) delivered again',
    );
    // Six accounts pushed once each: the five recorded again were not pushed again (a later second's MsgRandom
    // is not deduplicated by TIMPush, so each would have shown twice).
    expect(pushedAccounts()).toBe(6);
    const [guarded] = await env.notice.query<any[]>("SELECT COUNT(*) AS n FROM notice_delivery_events WHERE provider_ref = 'push:sent-before-ledger-loss'");
    expect(Number(guarded[0].n)).toBe(5);
  }, 120_000);
});
