import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { buildProcess, type NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv;
let proc: NoticeProcess | undefined;

afterEach(async () => {
  await proc?.stop();
  proc = undefined;
  await env?.close();
});

describe('gap-safe outbox cursor', () => {
  it('does not lose a lower id that commits after higher ids were read', async () => {
    env = await createTestEnv({ wallet_notice_worker: { gap_grace: '30s' } });
    const slow = await env.owner.getConnection();
    try {
      // Transaction A takes id 1 and stays open; B commits ids 2..4 meanwhile.
      await slow.beginTransaction();
      await insertWalletRows(slow, env.config.wallet_database, [balanceChanged(1)]);
      await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(2), balanceChanged(3), balanceChanged(4)]);
      proc = await startPipeline(env.config);
      await waitFor(
        async () => env.fakeIm.delivered().length,
        (n) => n === 3,
      );
      const poller = proc.ingest!.pollers[0]!;
      expect(poller.cursor).toMatchObject({ highWaterId: 4 });
      expect(poller.cursor!.gaps.map(([from, to]) => [from, to])).toEqual([[1, 1]]);
      // The hole is persisted, so another ingest process taking over would wait for it too.
      const [cursorRows] = await env.notice.query<any[]>('SELECT high_water_id, open_gaps FROM notice_ingest_cursors');
      expect(cursorRows[0].high_water_id).toBe(4);
      expect(JSON.parse(cursorRows[0].open_gaps)[0].slice(0, 2)).toEqual([1, 1]);

      await slow.commit();
      await waitFor(
        async () => env.fakeIm.delivered().length,
        (n) => n === 4,
        10_000,
        'the late row',
      );
      expect(
        env.fakeIm
          .delivered()
          .map((m) => JSON.parse(m.data).transaction_id)
          .sort(),
      ).toEqual(['tx_1', 'tx_2', 'tx_3', 'tx_4']);
      await waitFor(
        async () => poller.cursor?.gaps.length,
        (n) => n === 0,
      );
    } finally {
      slow.release();
    }
  });

  it('skips a rolled-back hole only after gap_grace, and keeps going meanwhile', async () => {
    env = await createTestEnv({ wallet_notice_worker: { gap_grace: '4s' } });
    const doomed = await env.owner.getConnection();
    try {
      await doomed.beginTransaction();
      await insertWalletRows(doomed, env.config.wallet_database, [balanceChanged(1)]);
      await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(2)]);
      await doomed.rollback();
      proc = await startPipeline(env.config);
      const poller = proc.ingest!.pollers[0]!;
      await waitFor(
        async () => env.fakeIm.delivered().length,
        (n) => n === 1,
      );
      expect(poller.cursor!.gaps).toHaveLength(1);
      await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(3)]);
      await waitFor(
        async () => env.fakeIm.delivered().length,
        (n) => n === 2,
      );
      const firstSeenMs = poller.cursor!.gaps[0]?.[2] ?? Date.now();
      // The skip is counted before the new cursor is saved: wait for both.
      await waitFor(
        async () => [poller.stats.gapsSkipped, poller.cursor?.gaps.length],
        ([n, open]) => n === 1 && open === 0,
        10_000,
        'hole skipped after grace',
      );
      expect(Date.now() - firstSeenMs).toBeGreaterThanOrEqual(4000);
    } finally {
      doomed.release();
    }
  });

  it('a row committed 3× gap_grace late is still delivered and counted, across an ingest restart', async () => {
    env = await createTestEnv({ wallet_notice_worker: { gap_grace: '1s' } });
    const slow = await env.owner.getConnection();
    try {
      await slow.beginTransaction();
      await insertWalletRows(slow, env.config.wallet_database, [balanceChanged(1)]);
      await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(2), balanceChanged(3)]);
      proc = await startPipeline(env.config);
      await waitFor(
        async () => env.fakeIm.delivered().length,
        (n) => n === 2,
      );
      // Given up after the grace: the hole moves from the cursor to the watch table, in one transaction.
      await waitFor(
        async () => (await env.notice.query<any[]>('SELECT ranges FROM notice_ingest_watched_gaps'))[0],
        (rows) => rows.length === 1,
        10_000,
        'hole watched',
      );
      const [cursor] = await env.notice.query<any[]>('SELECT open_gaps FROM notice_ingest_cursors');
      expect(JSON.parse(cursor[0].open_gaps)).toEqual([]);
      // The ingest process restarts (a deploy, a lease handover) while the owner is still slow.
      await proc.stop();
      proc = await startPipeline(env.config);
      await new Promise((r) => setTimeout(r, 2000));
      await slow.commit();
      await waitFor(
        async () => env.fakeIm.delivered().length,
        (n) => n === 3,
        20_000,
        'the late row',
      );
      expect(
        env.fakeIm
          .delivered()
          .map((m) => JSON.parse(m.data).transaction_id)
          .sort(),
      ).toEqual(['tx_1', 'tx_2', 'tx_3']);
      expect(await proc.metrics.render()).toMatch(/notice_ingest_late_rows_total\{source="wallet_outbox"\} 1/);
      await waitFor(
        async () => (await env.notice.query<any[]>('SELECT 1 FROM notice_ingest_watched_gaps'))[0],
        (rows) => rows.length === 0,
        5000,
        'watch emptied',
      );
    } finally {
      slow.release();
    }
  });

  it('a writer with auto_increment_increment = 7 is delivered in full, with summary lines instead of a warning per row', async () => {
    env = await createTestEnv({ wallet_notice_worker: { gap_grace: '500ms', batch_size: 20 }, log: { level: 'info' } });
    const lines: Array<{ level: number; msg: string }> = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
        done();
      },
    });
    proc = await buildProcess(env.config, ['ingest', 'deliver'], pino({ level: 'info' }, sink));
    await proc.start();
    const conn = await env.owner.getConnection();
    try {
      await conn.query('SET SESSION auto_increment_increment = 7');
      for (let i = 0; i < 10; i++) {
        await insertWalletRows(
          conn,
          env.config.wallet_database,
          Array.from({ length: 20 }, (_, j) => balanceChanged(i * 20 + j + 1)),
        );
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      conn.release();
    }
    await waitFor(
      async () => env.fakeIm.delivered().length,
      (n) => n === 200,
      20_000,
      '200 sparse rows',
    );
    const poller = proc.ingest!.pollers[0]!;
    await waitFor(
      async () => poller.stats.gapsSkipped,
      (n) => n >= 199 * 6,
      10_000,
      'holes given up',
    );
    // No warning per row (a reconciler pass that failed under a starved CPU and was retried is another matter).
    expect(lines.filter((l) => l.level >= 40 && l.msg !== 'reconciler pass failed; next pass will retry').map((l) => l.msg)).toEqual([]);
    // The first give-up is logged at once, the rest summed into at most one line a minute.
    expect(lines.filter((l) => l.msg.startsWith('outbox id holes not committed within gap_grace')).length).toBeLessThanOrEqual(2);
  });

  it('under concurrent writers committing in random order with rollbacks, every committed row is delivered once', async () => {
    env = await createTestEnv({ wallet_notice_worker: { gap_grace: '20s', batch_size: 50 } });
    proc = await startPipeline(env.config);
    let n = 0;
    const committed: string[] = [];
    const writer = async (w: number) => {
      const conn = await env.owner.getConnection();
      try {
        for (let i = 0; i < 25; i++) {
          const rows = [balanceChanged(++n), balanceChanged(++n)];
          await conn.beginTransaction();
          await insertWalletRows(conn, env.config.wallet_database, rows);
          await new Promise((r) => setTimeout(r, Math.random() * 30));
          if ((i + w) % 7 === 0) {
            await conn.rollback();
          } else {
            await conn.commit();
            committed.push(...rows.map((r) => r.event_id!));
          }
        }
      } finally {
        conn.release();
      }
    };
    await Promise.all([writer(0), writer(1), writer(2), writer(3)]);
    await waitFor(
      async () => env.fakeIm.delivered().length,
      (c) => c >= committed.length,
      20_000,
      `${committed.length} deliveries`,
    );
    await new Promise((r) => setTimeout(r, 300));
    const delivered = env.fakeIm.delivered().map((m) => JSON.parse(m.data).event_id as string);
    expect(delivered.sort()).toEqual([...committed].sort());
    expect(env.fakeIm.messages().length).toBe(committed.length);
    expect((await ledgerStatusCounts(env.notice)).delivered).toBe(committed.length);
  });
});

describe('where a new cursor starts', () => {
  it('start_from: latest skips the history already in the outbox, and a saved cursor is kept across restarts', async () => {
    env = await createTestEnv({ wallet_notice_worker: { start_from: 'latest' } });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 5 }, (_, i) => balanceChanged(i + 1)),
    );
    proc = await startPipeline(env.config);
    await waitFor(
      async () => proc!.ingest!.pollers[0]!.cursor?.highWaterId,
      (h) => h === 5,
      10_000,
      'cursor at the top',
    );
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(6), balanceChanged(7)]);
    await waitFor(
      async () => env!.fakeIm.delivered().length,
      (n) => n === 2,
    );
    await proc.stop();
    // Restarted with earliest: the saved cursor still wins, history stays unsent.
    proc = await startPipeline({ ...env.config, wallet_notice_worker: { ...env.config.wallet_notice_worker, start_from: 'earliest' } });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(8)]);
    await waitFor(
      async () => env!.fakeIm.delivered().length,
      (n) => n === 3,
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(
      env.fakeIm
        .delivered()
        .map((m) => JSON.parse(m.data).transaction_id)
        .sort(),
    ).toEqual(['tx_6', 'tx_7', 'tx_8']);
  });
});
