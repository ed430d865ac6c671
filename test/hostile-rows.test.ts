import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, type WalletRow } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { FactRecorder, type SourceFact } from '../src/intake/fact-recorder.ts';
import { CHANNEL_TENCENT_IM_C2C } from '../src/ledger/types.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
afterEach(async () => {
  await proc?.stop();
  proc = undefined;
  await env?.close();
  env = undefined;
});

type Ledger = Array<{ source_event_id: string; status: string; user_id: string; last_error_code: string | null; last_error: string | null }>;
async function ledgerRows(): Promise<Ledger> {
  const [rows] = await env!.notice.query<any[]>('SELECT source_event_id, status, user_id, last_error_code, last_error FROM notice_delivery_events');
  return rows as Ledger;
}
const sentEventIds = () => env!.fakeIm.delivered().map((m) => JSON.parse(m.data).event_id as string);

/** The owner's own key compares bytes, so ids that only a loose collation would fold can all exist in its outbox. */
async function byteExactOwnerKeys(): Promise<void> {
  await env!.owner.query(
    `ALTER TABLE \`${env!.config.wallet_database}\`.wallet_outbox MODIFY event_id VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin, MODIFY user_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin`,
  );
}

describe('hostile outbox rows: each one is its own failed row, never a stalled source', () => {
  it('a created_at_ms beyond 2^63−512, an 8 MB payload and a 64-emoji user id fail with reasons; the rows after them are delivered', async () => {
    env = await createTestEnv();
    await byteExactOwnerKeys();
    const emojiUser = '😀'.repeat(64);
    const huge = JSON.stringify({ ...JSON.parse(balanceChanged(2).payload), metadata: { n: Array.from({ length: 1_000_000 }, (_, i) => i) } });
    await env.owner.query(
      `INSERT INTO \`${env.config.wallet_database}\`.wallet_outbox (app_code, event_id, event_type, user_id, payload, created_at_ms) VALUES ('lalu', 'h-time', 'WalletBalanceChanged', '10001', ?, 9223372036854775807)`,
      [balanceChanged(1).payload],
    );
    await insertWalletRows(env.owner, env.config.wallet_database, [
      { ...balanceChanged(2), event_id: 'h-huge', payload: huge },
      { ...balanceChanged(3), event_id: 'h-emoji-user', user_id: emojiUser },
      ...Array.from({ length: 5 }, (_, i) => ({ ...balanceChanged(10 + i), event_id: `h-good-${i}` })),
    ]);
    proc = await startPipeline(env.config);
    await waitFor(
      async () => sentEventIds().length,
      (n) => n === 5,
      15_000,
      'the good rows',
    );
    const rows = await waitFor(ledgerRows, (r) => r.length === 8);
    const byId = new Map(rows.map((r) => [r.source_event_id, r]));
    expect(byId.get('h-time')).toMatchObject({ status: 'failed', last_error_code: 'MALFORMED' });
    expect(byId.get('h-time')!.last_error).toContain('created_at_ms 9223372036854775807 is not an integer');
    expect(byId.get('h-huge')!.last_error).toMatch(/payload is \d{7,} bytes/);
    expect(byId.get('h-emoji-user')).toMatchObject({ status: 'failed', user_id: '' });
    expect(byId.get('h-emoji-user')!.last_error).toContain('user_id is 256 bytes');
    // Nothing went to a cut-down account.
    expect(env.fakeIm.messages().map((m) => m.toAccount)).not.toContain('😀'.repeat(32));
    expect(sentEventIds().sort()).toEqual(Array.from({ length: 5 }, (_, i) => `h-good-${i}`));
  });

  it('ids that differ only by case, accent, width, ligature, NUL, trailing space or a late emoji are separate events', async () => {
    env = await createTestEnv();
    await byteExactOwnerKeys();
    const pairs = [
      ['coll-ss', 'coll-ß'],
      ['coll-a', 'coll-ª'],
      ['coll-fi', 'coll-ﬁ'],
      ['coll-1', 'coll-１'],
      ['coll-case', 'coll-CASE'],
      ['coll-nul', 'coll-nul\u0000'],
      ['coll-sp', 'coll-sp '],
      ['😀'.repeat(98) + 'a', '😀'.repeat(98) + 'b'],
    ];
    const ids = pairs.flat();
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      ids.map((id, i) => ({ ...balanceChanged(i + 1), event_id: id })),
    );
    // And one id past the owner contract's 191 characters: failed under a substitute key, not cut into another id.
    await env.owner.query(
      `ALTER TABLE \`${env.config.wallet_database}\`.wallet_outbox MODIFY event_id VARCHAR(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin`,
    );
    await insertWalletRows(env.owner, env.config.wallet_database, [{ ...balanceChanged(99), event_id: 'x'.repeat(192) }]);
    proc = await startPipeline(env.config);
    await waitFor(
      async () => sentEventIds().length,
      (n) => n === ids.length,
      15_000,
      'every distinct id sent',
    );
    expect(sentEventIds().sort()).toEqual([...ids].sort());
    const rows = await waitFor(ledgerRows, (r) => r.length === ids.length + 1);
    expect(
      rows
        .filter((r) => r.status === 'delivered')
        .map((r) => r.source_event_id)
        .sort(),
    ).toEqual([...ids].sort());
    const tooLong = rows.find((r) => r.status === 'failed')!;
    expect(tooLong.source_event_id).toBe('wallet_outbox-row-17');
    expect(tooLong.last_error).toContain('event_id is 192 characters; the limit is 191');
  });

  it('an outbox id beyond 2^53 stops the source with readiness and notice_ingest_stalled saying why', async () => {
    env = await createTestEnv({ wallet_notice_worker: { stall_threshold: '1s' } });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1)]);
    await env.owner.query(
      `INSERT INTO \`${env.config.wallet_database}\`.wallet_outbox (id, app_code, event_id, event_type, user_id, payload, created_at_ms) VALUES (9007199254740993, 'lalu', 'big-id', 'WalletBalanceChanged', '10001', ?, 1)`,
      [balanceChanged(2).payload],
    );
    proc = await startPipeline(env.config);
    await waitFor(
      async () => sentEventIds().length,
      (n) => n === 1,
    );
    const readiness = await waitFor(
      () => proc!.readiness(),
      (r) => !r.ready,
      10_000,
      'readiness red',
    );
    expect(readiness.checks['source:wallet_outbox']).toMatch(/stalled for \d+ s: outbox id 9007199254740993 is beyond 2\^53/);
    const metrics = await proc.metrics.render();
    expect(metrics).toMatch(/notice_ingest_stalled\{source="wallet_outbox"\} 1/);
    expect(metrics).toMatch(/notice_ingest_lag_ms\{source="wallet_outbox"\} [1-9]/);
  });

  it('300 junk event types make one metrics series, not 300', async () => {
    env = await createTestEnv();
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 300 }, (_, i) => ({ ...balanceChanged(i + 1), event_type: `Junk${i}` })),
    );
    proc = await startPipeline(env.config, ['ingest']);
    await waitFor(
      async () => proc!.ingest!.pollers[0]!.stats.skipped,
      (n) => n === 300,
    );
    const series = (await proc.metrics.render()).split('\n').filter((l) => l.startsWith('notice_ingest_events_total{'));
    expect(series).toEqual(['notice_ingest_events_total{source="wallet_outbox",event_type="other",result="skipped"} 300']);
  });

  it('a row the ledger statement refuses is failed on its own and the rest of the batch goes on', async () => {
    env = await createTestEnv();
    const ledger = new LedgerRepository(env.notice);
    const enqueued: string[] = [];
    const recorder = new FactRecorder(
      ledger,
      async (items) => void enqueued.push(...items.map((i) => i.key.sourceEventId)),
      () => [CHANNEL_TENCENT_IM_C2C],
      pino({ level: 'silent' }),
    );
    const fact = (id: string, noticeKind: string): SourceFact => ({
      key: { sourceName: 'wallet_outbox', appCode: 'lalu', sourceEventId: id },
      mapped: { kind: 'notice', eventType: 'WalletBalanceChanged', userId: '10001', noticeKind, payload: '{}' },
      sourceRowId: 1,
      sourceCreatedAtMs: 1,
    });
    // notice_kind is VARCHAR(32): strict mode refuses the whole multi-row INSERT because of this one value.
    const counts = await recorder.record([fact('iso-1', 'wallet_notice'), fact('iso-bad', 'k'.repeat(40)), fact('iso-2', 'wallet_notice')]);
    expect(counts.ingested).toBe(3);
    const rows = await ledgerRows();
    expect(rows.map((r) => [r.source_event_id, r.status]).sort()).toEqual([
      ['iso-1', 'pending'],
      ['iso-2', 'pending'],
      ['iso-bad', 'failed'],
    ]);
    expect(rows.find((r) => r.source_event_id === 'iso-bad')!.last_error).toContain('the ledger refused this row');
    expect(enqueued.sort()).toEqual(['iso-1', 'iso-2']);
  });
});

/** A deterministic PRNG, so a failing fuzz case can be replayed. */
function rng(seed: number) {
  return () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
}

describe('fuzz: random and boundary rows', () => {
  it('every row of a known type ends delivered or failed with a reason, and a good row after them is delivered', async () => {
    env = await createTestEnv({ wallet_notice_worker: { batch_size: 25 } });
    await byteExactOwnerKeys();
    const random = rng(Number(process.env.FUZZ_SEED ?? 20261204));
    const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!;
    const strings = ['', ' ', 'a', '\u0000', 'ß', '😀'.repeat(20), 'x'.repeat(33), '1'.repeat(64), '"quoted"', '<script>', '\u202e', 'ﬁ', '１２３'];
    const numbers: unknown[] = [
      0,
      -1,
      1.5,
      2 ** 53,
      '9007199254740993',
      '9223372036854775807',
      '9223372036854775808',
      '-9223372036854775809',
      '1e400',
      null,
      'abc',
      true,
    ];
    const payloads = (): string => {
      const base = JSON.parse(balanceChanged(1).payload);
      switch (Math.floor(random() * 8)) {
        case 0:
          return '[]';
        case 1:
          return '"text"';
        case 2:
          return JSON.stringify({ ...base, balance_version: pick(numbers) });
        case 3:
          return JSON.stringify({ ...base, available_delta: pick(numbers), asset_type: pick(['COIN', 'GEM', '', null]) });
        case 4:
          return `${'['.repeat(30)}${']'.repeat(30)}`;
        case 5:
          return JSON.stringify({ ...base, metadata: { blob: 'x'.repeat(Math.floor(random() * 20_000)) } });
        case 6:
          return JSON.stringify({ ...base, metadata: pick(numbers) });
        default:
          return JSON.stringify(base);
      }
    };
    const rows: WalletRow[] = [];
    for (let i = 0; i < 60; i++) {
      rows.push({
        app_code: pick(['lalu', 'lalu', '', null, 'a'.repeat(33), 'ß']),
        event_id: random() < 0.1 ? null : `fz-${i}-${pick(strings)}`,
        event_type: pick(['WalletBalanceChanged', 'WalletBalanceChanged', 'VipActivated', 'Unknown', '']),
        user_id: pick(['10001', ' 10002 ', '', null, ...strings]),
        payload: payloads(),
        created_at_ms: pick([1710000000000, 0, -1]),
      });
    }
    const inserted: WalletRow[] = [];
    for (const row of rows) {
      // The owner's own constraints (JSON validity, nesting depth, its unique key) may refuse some: those never exist.
      try {
        await insertWalletRows(env.owner, env.config.wallet_database, [row]);
        inserted.push(row);
      } catch {
        /* not in the outbox */
      }
    }
    await env.owner.query(`INSERT INTO \`${env.config.wallet_database}\`.wallet_outbox (app_code, event_id, event_type, user_id, payload, created_at_ms) VALUES
      ('lalu', 'fz-null-payload', 'WalletBalanceChanged', '10001', NULL, NULL), (NULL, NULL, NULL, NULL, NULL, NULL), ('lalu', 'fz-time', 'VipActivated', '10001', '{}', 9223372036854775807)`);
    await insertWalletRows(env.owner, env.config.wallet_database, [{ ...balanceChanged(7), event_id: 'fz-last-good' }]);
    proc = await startPipeline(env.config);
    await waitFor(
      async () => sentEventIds(),
      (ids) => ids.includes('fz-last-good'),
      20_000,
      'the good row after the fuzz rows',
    );
    const known = inserted.filter((r) => r.event_type === 'WalletBalanceChanged' || r.event_type === 'VipActivated').length + 3;
    expect(known).toBeGreaterThan(20); // the fuzz rows really reached the ledger, not only the owner's refusals
    const ledger = await waitFor(
      ledgerRows,
      (r) => r.length === known && r.every((x) => x.status === 'delivered' || x.status === 'failed'),
      15_000,
      'every known row final',
    );
    for (const row of ledger.filter((r) => r.status === 'failed')) expect(row.last_error, row.source_event_id).toBeTruthy();
    expect((await proc.readiness()).ready).toBe(true);
  });
});
