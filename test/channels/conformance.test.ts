import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createTestEnv, MYSQL_HOST, MYSQL_PORT, mysqlServerVia, TEST_SECRET, type TestEnv } from '../helpers/env.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';
import { CHANNEL_MODULES } from '../../src/channels/registry.ts';
import { channelRoutes } from '../../src/channels/routing.ts';
import type { ChannelOutcome, DeliveryChannel } from '../../src/channels/types.ts';
import type { LedgerRow } from '../../src/ledger/types.ts';
import { claimRow, insertAndClaim } from '../helpers/ledger.ts';

/**
 * The contract every registered channel keeps, run against each one's real provider (fake-im for Tencent, MariaDB
 * for the inbox). A channel added to the registry without a probe here fails this suite: the probe says how to see
 * what reached the user and how to take the provider away.
 */
interface ChannelProbe {
  /** Config that gives the channel a sender. */
  config: Record<string, unknown>;
  /** A notice kind the channel takes. */
  kind: string;
  /** The recipients of every copy of the row's notice the user could see (one entry per copy). */
  seen(t: Trial, row: LedgerRow): Promise<string[]>;
  /**
   * What the next claim of a sent row whose outcome was never recorded (the sender died) comes to. Either way the
   * user sees one copy: `delivered` — the provider dedups the resend (C2C MsgRandom, the inbox's unique key);
   * `unconfirmed` — the provider would not (push dedups MsgRandom within one second only), so the channel marked
   * the row before the call and does not resend it.
   */
  resend: 'delivered' | 'unconfirmed';
  /** The provider goes away (refused, cut or erroring); the returned function brings it back. */
  outage(t: Trial): Promise<() => Promise<void>>;
  /** A row this provider can never take (set up as the provider needs), for its permanent refusal. */
  refusedRow(t: Trial, row: LedgerRow): LedgerRow;
}

interface Trial { env: TestEnv; proxy: TcpProxy }

const PROBES: Record<string, ChannelProbe> = {
  tencent_im_c2c: {
    config: {},
    kind: 'room_notice',
    resend: 'delivered',
    async seen({ env }, row) {
      return env.fakeIm.messages().filter((m) => !m.duplicate && JSON.parse(m.data).event_id === row.sourceEventId).map((m) => m.toAccount);
    },
    async outage({ env }) {
      env.fakeIm.setFaults({ http_errors: 1_000_000 });
      return async () => env.fakeIm.setFaults({});
    },
    refusedRow({ env }, row) {
      env.fakeIm.setFaults({ not_imported: ['never-imported'] });
      return { ...row, userId: 'never-imported' };
    },
  },
  inbox: {
    config: { inbox: { enabled: true } },
    kind: 'activity_notice',
    resend: 'delivered',
    async seen({ env }, row) {
      const [rows] = await env.owner.query<any[]>(`SELECT user_id FROM \`${env.id}_notice\`.notice_inbox_items WHERE source_event_id = ?`, [row.sourceEventId]);
      return rows.map((r) => String(r.user_id));
    },
    async outage({ proxy }) {
      await proxy.down();
      return () => proxy.up();
    },
    refusedRow(_t, row) {
      // Longer than the item's user_id column: MySQL refuses the value itself.
      return { ...row, userId: 'u'.repeat(300) };
    },
  },
  tencent_push: {
    config: { tencent_push: { enabled: true, batch_linger: '0ms' } },
    kind: 'activity_notice',
    // Every trial has its own fake-im and each row its own user, so the pushes to the row's user are its copies.
    async seen({ env }, row) {
      return env.fakeIm.pushes().filter((p) => !p.duplicate && p.accounts.includes(row.userId)).map(() => row.userId);
    },
    resend: 'unconfirmed',
    async outage({ env }) {
      env.fakeIm.setPushFaults({ http_errors: 1_000_000 });
      return async () => env.fakeIm.setPushFaults({});
    },
    refusedRow({ env }, row) {
      env.fakeIm.setPushFaults({ not_imported: ['never-imported'] });
      return { ...row, userId: 'never-imported' };
    },
  },
};

let cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

async function trial(probe: ChannelProbe): Promise<Trial & { channel: DeliveryChannel }> {
  const proxy = new TcpProxy(MYSQL_HOST, MYSQL_PORT);
  await proxy.start();
  const env = await createTestEnv({ ...probe.config, tencent_im: { request_timeout: '500ms' } }, { mysqlServerForService: mysqlServerVia(proxy.port) });
  cleanup.push(() => env.close(), () => proxy.down());
  const module = CHANNEL_MODULES.find((m) => PROBES[m.name] === probe)!;
  const channel = await module.create({ config: env.config, routes: channelRoutes(env.config), pool: env.notice, redis: env.redis, newerVersion: async () => null, logger: pino({ level: 'silent' }) });
  cleanup.push(() => channel.close?.());
  return { env, proxy, channel };
}

const claimed = (t: Trial, row: LedgerRow): Promise<LedgerRow> => insertAndClaim(t.env.notice, row, 'conformance', 10_000);

/** The next claim of a row (its lock given up first), as a worker taking over after a crash would see it. */
async function reclaimed(t: Trial, row: LedgerRow): Promise<LedgerRow> {
  await t.env.notice.query('UPDATE notice_delivery_events SET lock_until_ms = 0 WHERE source_event_id = ? AND channel = ?', [row.sourceEventId, row.channel]);
  return claimRow(t.env.notice, row, 'conformance-takeover', 10_000);
}

let n = 0;
function ledgerRow(channel: string, kind: string): LedgerRow {
  const eventId = `conf_${process.pid}_${++n}`;
  const payload = JSON.stringify({ event_type: 'SystemNotice', event_id: eventId, app_code: 'lalu', user_id: '70001', title_key: 't', body_key: 'b' });
  const now = Date.now();
  return {
    sourceName: 'activity_outbox', appCode: 'lalu', sourceEventId: eventId, channel, eventType: 'SystemNotice', userId: '70001', noticeKind: kind,
    status: 'delivering', attemptCount: 1, claimCount: 1, lockedBy: 'conformance', lockUntilMs: now + 10_000, nextRetryAtMs: null,
    lastErrorCode: null, lastError: null, payload, imMsgKey: null, sourceRowId: n, sourceCreatedAtMs: now, createdAtMs: now, updatedAtMs: now,
    deliveredAtMs: null, supersedeVersion: null, supersedeKey: null, supersededBy: null,
  };
}

/** A send as the delivery core makes it: a thrown error is an infrastructure failure the job waits out. */
async function sendOnce(channel: DeliveryChannel, row: LedgerRow): Promise<ChannelOutcome | { kind: 'threw'; message: string }> {
  try {
    return await channel.send(row, { lockUntilMs: Date.now() + 10_000 });
  } catch (err) {
    return { kind: 'threw', message: (err as Error).message };
  }
}

describe.each(CHANNEL_MODULES.map((m) => [m.name]))('channel contract: %s', (name) => {
  const probe = PROBES[name];

  it('has a probe in this suite', () => {
    expect(probe, `add a ChannelProbe for ${name} to test/channels/conformance.test.ts`).toBeDefined();
  });
  if (!probe) return;

  it('delivers a row with a provider reference; the same row sent again (a crash before the record) reaches the user once', async () => {
    const t = await trial(probe);
    const row = await claimed(t, ledgerRow(name, probe.kind));
    const first = await sendOnce(t.channel, row);
    expect(first).toMatchObject({ kind: 'delivered', ref: expect.stringMatching(/\S/) });
    // Nothing recorded: the next claim finds the row as the dead worker left it.
    const again = await sendOnce(t.channel, await reclaimed(t, row));
    expect(again).toMatchObject({ kind: probe.resend, ...(probe.resend === 'unconfirmed' ? { ref: expect.stringMatching(/\S/), code: expect.stringMatching(/\S/) } : {}) });
    expect(await probe.seen(t, row)).toEqual([row.userId]);
  });

  it('concurrent rows for different users each land once, on their own user', async () => {
    const t = await trial(probe);
    const rows = await Promise.all(Array.from({ length: 30 }, (_, i) => claimed(t, { ...ledgerRow(name, probe.kind), userId: String(71000 + i) })));
    const outcomes = await Promise.all(rows.map((r) => sendOnce(t.channel, r)));
    expect(outcomes.map((o) => o.kind)).toEqual(rows.map(() => 'delivered'));
    for (const r of rows) expect(await probe.seen(t, r)).toEqual([r.userId]);
  });

  it('while the provider is away no send claims delivery and nothing reaches the user; after it returns the row lands once', async () => {
    const t = await trial(probe);
    const row = await claimed(t, ledgerRow(name, probe.kind));
    const other = await claimed(t, ledgerRow(name, probe.kind));
    const restore = await probe.outage(t);
    const during = await Promise.all([sendOnce(t.channel, row), sendOnce(t.channel, other)]);
    for (const outcome of during) expect(['retry', 'rate_limited', 'not_now', 'threw']).toContain(outcome.kind);
    expect(JSON.stringify(during)).not.toContain(TEST_SECRET);
    await restore();
    let after = await sendOnce(t.channel, row);
    // A pool may hand out one connection the outage cut before it notices; the core would wait and claim again.
    for (let i = 0; i < 5 && after.kind !== 'delivered'; i++) after = await sendOnce(t.channel, row);
    expect(after.kind).toBe('delivered');
    expect(await probe.seen(t, row)).toEqual([row.userId]);
  });

  it('a row the provider can never take ends permanent with a code and a reason, without throwing or leaking secrets', async () => {
    const t = await trial(probe);
    const row = probe.refusedRow(t, await claimed(t, ledgerRow(name, probe.kind)));
    const outcome = await sendOnce(t.channel, row);
    expect(outcome).toMatchObject({ kind: 'permanent', code: expect.stringMatching(/\S/), message: expect.stringMatching(/\S/) });
    expect(JSON.stringify(outcome)).not.toContain(TEST_SECRET);
    expect(await probe.seen(t, row)).toEqual([]);
  });

  it('its upkeep, if it has any, runs repeatedly and reports counts', async () => {
    const t = await trial(probe);
    if (!t.channel.maintain) return;
    expect(t.channel.maintainEveryMs).toBeGreaterThan(0);
    for (let i = 0; i < 2; i++) {
      const counts = await t.channel.maintain(Date.now());
      for (const v of Object.values(counts)) expect(Number.isInteger(v)).toBe(true);
    }
  });
});
