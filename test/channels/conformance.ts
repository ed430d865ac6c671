import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, MYSQL_HOST, MYSQL_PORT, mysqlServerVia, TEST_SECRET, type TestEnv } from '../helpers/env.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';
import type { ChannelModule, ChannelOutcome, ChannelProbe, DeliveryChannel, ProbeWorld } from '../../src/channels/types.ts';
import type { ModuleSet } from '../../src/modules/module-set.ts';
import type { LedgerRow } from '../../src/ledger/types.ts';
import { channelContextFor, claimRow, insertAndClaim } from '../helpers/ledger.ts';

interface Trial {
  env: TestEnv;
  proxy: TcpProxy;
  world: ProbeWorld;
}

let cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

async function trial(module: ChannelModule, probe: ChannelProbe, modules?: ModuleSet): Promise<Trial & { channel: DeliveryChannel }> {
  const proxy = new TcpProxy(MYSQL_HOST, MYSQL_PORT);
  await proxy.start();
  const env = await createTestEnv(
    { ...probe.config, tencent_im: { request_timeout: '500ms' } },
    { mysqlServerForService: mysqlServerVia(proxy.port), modules },
  );
  cleanup.push(
    () => env.close(),
    () => proxy.down(),
  );
  const channel = await module.create(channelContextFor(env));
  cleanup.push(() => channel.close?.());
  const world: ProbeWorld = {
    fakeIm: env.fakeIm,
    notice: env.notice,
    owner: env.owner,
    noticeDatabase: `${env.id}_notice`,
    async cutMysql() {
      await proxy.down();
      return () => proxy.up();
    },
  };
  return { env, proxy, world, channel };
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
    sourceName: 'activity_outbox',
    appCode: 'lalu',
    sourceEventId: eventId,
    channel,
    eventType: 'SystemNotice',
    userId: '70001',
    noticeKind: kind,
    status: 'delivering',
    attemptCount: 1,
    claimCount: 1,
    lockedBy: 'conformance',
    lockUntilMs: now + 10_000,
    nextRetryAtMs: null,
    lastErrorCode: null,
    lastError: null,
    payload,
    providerRef: null,
    sourceRowId: n,
    sourceCreatedAtMs: now,
    createdAtMs: now,
    updatedAtMs: now,
    deliveredAtMs: null,
    supersedeVersion: null,
    supersedeKey: null,
    supersededBy: null,
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

/**
 * The contract every channel keeps, run against its real provider (fake-im for Tencent, MariaDB for the inbox) through
 * the probe its module ships. `modules` adds modules beyond the registry's (the examples under test/examples/).
 */
export function channelContract(channels: readonly ChannelModule[], modules?: ModuleSet): void {
  describe.each(channels.map((m) => [m.name, m] as const))('channel contract: %s', (name, module) => {
    let probe: ChannelProbe;
    beforeAll(async () => {
      probe = await module.probe();
    });
    afterAll(async () => {
      await probe?.close?.();
    });
    const trialOf = () => trial(module, probe, modules);

    it('delivers a row with a provider reference; the same row sent again (a crash before the record) reaches the user once', async () => {
      const t = await trialOf();
      const row = await claimed(t, ledgerRow(name, probe.kind));
      const first = await sendOnce(t.channel, row);
      expect(first).toMatchObject({ kind: 'delivered', ref: expect.stringMatching(/\S/) });
      // Nothing recorded: the next claim finds the row as the dead worker left it.
      const again = await sendOnce(t.channel, await reclaimed(t, row));
      expect(again).toMatchObject({
        kind: probe.resend,
        ...(probe.resend === 'unconfirmed' ? { ref: expect.stringMatching(/\S/), code: expect.stringMatching(/\S/) } : {}),
      });
      expect(await probe.seen(t.world, row)).toEqual([row.userId]);
    });

    it('concurrent rows for different users each land once, on their own user', async () => {
      const t = await trialOf();
      const rows = await Promise.all(Array.from({ length: 30 }, (_, i) => claimed(t, { ...ledgerRow(name, probe.kind), userId: String(71000 + i) })));
      const outcomes = await Promise.all(rows.map((r) => sendOnce(t.channel, r)));
      expect(outcomes.map((o) => o.kind)).toEqual(rows.map(() => 'delivered'));
      for (const r of rows) expect(await probe.seen(t.world, r)).toEqual([r.userId]);
    });

    it('while the provider is away no send claims delivery and nothing reaches the user; after it returns the row lands once', async () => {
      const t = await trialOf();
      const row = await claimed(t, ledgerRow(name, probe.kind));
      const other = await claimed(t, ledgerRow(name, probe.kind));
      const restore = await probe.outage(t.world);
      const during = await Promise.all([sendOnce(t.channel, row), sendOnce(t.channel, other)]);
      for (const outcome of during) expect(['retry', 'rate_limited', 'not_now', 'threw']).toContain(outcome.kind);
      expect(JSON.stringify(during)).not.toContain(TEST_SECRET);
      await restore();
      let after = await sendOnce(t.channel, row);
      // A pool may hand out one connection the outage cut before it notices; the core would wait and claim again.
      for (let i = 0; i < 5 && after.kind !== 'delivered'; i++) after = await sendOnce(t.channel, row);
      expect(after.kind).toBe('delivered');
      expect(await probe.seen(t.world, row)).toEqual([row.userId]);
    });

    it('a row the provider can never take ends permanent with a code and a reason, without throwing or leaking secrets', async () => {
      const t = await trialOf();
      const row = probe.refusedRow(t.world, await claimed(t, ledgerRow(name, probe.kind)));
      const outcome = await sendOnce(t.channel, row);
      expect(outcome).toMatchObject({ kind: 'permanent', code: expect.stringMatching(/\S/), message: expect.stringMatching(/\S/) });
      expect(JSON.stringify(outcome)).not.toContain(TEST_SECRET);
      expect(await probe.seen(t.world, row)).toEqual([]);
    });

    it('its upkeep, if it has any, runs repeatedly and reports counts', async () => {
      const t = await trialOf();
      if (!t.channel.maintain) return;
      expect(t.channel.maintainEveryMs).toBeGreaterThan(0);
      for (let i = 0; i < 2; i++) {
        const counts = await t.channel.maintain(Date.now());
        for (const v of Object.values(counts)) expect(Number.isInteger(v)).toBe(true);
      }
    });
  });
}
