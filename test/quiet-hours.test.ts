import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { DateTime } from 'luxon';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { freePort } from './helpers/ports.ts';
import { unary, refusal } from './helpers/grpc.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { insertActivityRows, type ActivityRow } from './helpers/activity.ts';
import { insertWalletRows, vipActivated } from './helpers/outbox.ts';
import { insertRoomRows, kick } from './helpers/room.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { PREFERENCES_PROTO } from '../src/preferences/api.ts';
import { channelStanding } from '../src/ledger/present-fact.ts';
import { toLedgerRow } from '../src/ledger/repository.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let client: any;
afterEach(async () => {
  client?.close();
  await proc?.stop();
  await env?.close();
  client = proc = env = undefined;
});

const call = (method: string, request: unknown) => unary(client, method, request);
const refused = (method: string, request: unknown) => refusal(client, method, request);

const ZONE = 'Asia/Shanghai';
const user = { app_code: 'lalu', user_id: '30007' };
/** A window on the user's clock from a minute ago until `seconds` from now (HH:MM:SS; over midnight it runs overnight). */
const windowEndingIn = (seconds: number) => {
  const now = DateTime.now().setZone(ZONE);
  const until = now.plus({ seconds }).set({ millisecond: 0 });
  return { start: now.minus({ minutes: 1 }).toFormat('HH:mm:ss'), end: until.toFormat('HH:mm:ss'), untilMs: until.toMillis() };
};
const activity = (n: number): ActivityRow => ({
  event_id: `qh_${n}`,
  event_type: 'SystemNotice',
  user_id: user.user_id,
  payload: { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body' },
  created_at_ms: Date.now(),
});
const statuses = async (e: TestEnv) =>
  Object.fromEntries(
    (await e.notice.query<any[]>('SELECT CONCAT(channel, ":", status) AS k, COUNT(*) AS n FROM notice_delivery_events GROUP BY k'))[0].map((r) => [
      r.k,
      Number(r.n),
    ]),
  );

async function world(config: Record<string, unknown> = {}): Promise<void> {
  const apiPort = await freePort();
  env = await createTestEnv({
    inbox: { enabled: true, api_port: apiPort },
    tencent_push: { enabled: true, batch_linger: '0ms', kinds: ['activity_notice'] },
    activity_notice_worker: { enabled: true, poll_interval: '50ms' },
    room_notice_worker: { enabled: true, poll_interval: '50ms' },
    reconciler: { interval: '500ms', pending_grace: '1s' },
    ...config,
  });
  proc = await startPipeline(env.config, ['ingest', 'deliver', 'inbox-api']);
  const pkg = grpc.loadPackageDefinition(await protoLoader.load(PREFERENCES_PROTO, { keepCase: true, longs: String, defaults: true })) as any;
  client = new pkg.notice.preferences.v1.PreferencesService(`127.0.0.1:${apiPort}`, grpc.credentials.createInsecure());
}

describe('quiet hours (PreferencesService SetQuietHours; pushes wait in the ledger until the window ends)', () => {
  it('set, read back and refused with the field named; another caller has none', async () => {
    await world();
    expect(await call('GetQuietHours', { caller: user })).toEqual({ time_zone: '', windows: [] });
    const set = await call('SetQuietHours', { caller: user, quiet_hours: { time_zone: ZONE, windows: [{ start: '22:00', end: '08:00' }] } });
    expect(set).toEqual({ time_zone: ZONE, windows: [{ start: '22:00', end: '08:00' }] });
    expect(await call('GetQuietHours', { caller: { app_code: 'lalu', user_id: '30008' } })).toEqual({ time_zone: '', windows: [] });
    const zone = await refused('SetQuietHours', { caller: user, quiet_hours: { time_zone: 'Mars/Olympus_Mons', windows: [] } });
    expect(zone.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(zone.details).toBe('quiet_hours.time_zone: must be an IANA time zone such as Asia/Shanghai');
    const time = await refused('SetQuietHours', { caller: user, quiet_hours: { time_zone: ZONE, windows: [{ start: '7pm', end: '08:00' }] } });
    expect(time.details).toBe('quiet_hours.windows.0.start: must be HH:MM or HH:MM:SS (00:00 to 23:59:59)');
    expect((await refused('GetQuietHours', {})).code).toBe(grpc.status.INVALID_ARGUMENT);
    // No windows removes them.
    expect(await call('SetQuietHours', { caller: user, quiet_hours: { time_zone: ZONE, windows: [] } })).toEqual({ time_zone: '', windows: [] });
  });

  it('five notices in quiet hours: their inbox items and silent messages at once, no push until the window ends, then five; a kick goes at once', async () => {
    await world();
    const w = windowEndingIn(12);
    await call('SetQuietHours', { caller: user, quiet_hours: { time_zone: ZONE, windows: [{ start: w.start, end: w.end }] } });
    await insertActivityRows(env!.owner, env!.config.activity_database, [1, 2, 3, 4, 5].map(activity));
    await insertWalletRows(env!.owner, env!.config.wallet_database, [{ ...vipActivated(1), user_id: user.user_id }]);
    await insertRoomRows(env!.owner, env!.config.room_database, [{ ...kick(7), created_at_ms: Date.now() }]);
    const early = await waitFor(
      () => statuses(env!),
      // The inbox holds the VIP notice and the kick too; none of it waits.
      (c) => c['inbox:delivered'] === 7 && c['tencent_im_c2c:delivered'] === 7 && c['tencent_push:deferred'] === 5,
      10_000,
      'inbox and messages at once, pushes deferred',
    );
    expect(early['tencent_push:delivered']).toBeUndefined();
    expect(Date.now()).toBeLessThan(w.untilMs);
    // The VIP message carries the phone notification outside quiet hours; inside, Tencent is told not to push it.
    const vip = env!.fakeIm.messages().find((m) => m.ext === 'vip_notice')!;
    expect(vip.offlinePush).toEqual({ PushFlag: 1 });
    // Operators see the moment on the user's clock, and the backlog gauge counts them.
    const [rows] = await env!.notice.query<any[]>("SELECT * FROM notice_delivery_events WHERE channel = 'tencent_push' LIMIT 1");
    // A moment on a whole minute is written without its seconds ("08:00"), so the window's end may be either form.
    expect(channelStanding(toLedgerRow(rows[0]), 'UTC').reason).toMatch(
      new RegExp(`^deferred until ${w.end.replace(/:00$/, '(:00)?')} Asia/Shanghai \\(quiet hours\\); due `),
    );
    await waitFor(
      () => proc!.metrics.registry.metrics(),
      (text) => /\nnotice_deferred 5\n/.test(text),
      5_000,
      'notice_deferred 5',
    );

    await waitFor(
      () => statuses(env!),
      (c) => c['tencent_push:delivered'] === 5,
      15_000,
      'the pushes released',
    );
    const pushes = env!.fakeIm.pushes().filter((p) => p.accounts.includes(user.user_id));
    expect(pushes.flatMap((p) => p.accounts)).toHaveLength(5);
    for (const p of pushes) {
      expect(p.receivedAtMs).toBeGreaterThanOrEqual(w.untilMs);
      expect(p.receivedAtMs).toBeLessThan(w.untilMs + 3_000);
    }
  });

  it('Redis loses the waiting jobs: the ledger still holds the pushes and they go once, after the window', async () => {
    await world();
    const w = windowEndingIn(5);
    await call('SetQuietHours', { caller: user, quiet_hours: { time_zone: ZONE, windows: [{ start: w.start, end: w.end }] } });
    await insertActivityRows(env!.owner, env!.config.activity_database, [1, 2, 3].map(activity));
    await waitFor(
      () => statuses(env!),
      (c) => c['tencent_push:deferred'] === 3,
      10_000,
      'pushes deferred',
    );
    // Every key of the deployment's prefix: jobs, delayed sets, everything.
    const keys = await env!.redis.keys(`{${env!.id}}*`);
    await env!.redis.del(...keys);
    await waitFor(
      () => statuses(env!),
      (c) => c['tencent_push:delivered'] === 3,
      20_000,
      'the pushes released by the reconciler',
    );
    await new Promise((r) => setTimeout(r, 1500));
    const pushes = env!.fakeIm.pushes().filter((p) => !p.duplicate && p.accounts.includes(user.user_id));
    expect(pushes.flatMap((p) => p.accounts)).toHaveLength(3);
    expect(Math.min(...pushes.map((p) => p.receivedAtMs))).toBeGreaterThanOrEqual(w.untilMs);
  });

  it("policy drop ends a channel's notices in quiet hours as suppressed (QUIET_HOURS); the inbox still gets them", async () => {
    await world({ quiet_hours: { policy: { tencent_push: 'drop' } } });
    const w = windowEndingIn(60);
    await call('SetQuietHours', { caller: user, quiet_hours: { time_zone: ZONE, windows: [{ start: w.start, end: w.end }] } });
    await insertActivityRows(env!.owner, env!.config.activity_database, [1, 2].map(activity));
    await waitFor(
      () => statuses(env!),
      (c) => c['tencent_push:suppressed'] === 2 && c['inbox:delivered'] === 2 && c['tencent_im_c2c:delivered'] === 2,
      10_000,
      'pushes dropped',
    );
    const [rows] = await env!.notice.query<any[]>("SELECT last_error_code FROM notice_delivery_events WHERE channel = 'tencent_push'");
    expect(rows.map((r) => r.last_error_code)).toEqual(['QUIET_HOURS', 'QUIET_HOURS']);
    expect(env!.fakeIm.pushes()).toHaveLength(0);
  });

  it('with a digest on, the notices held for the quiet hours go out as exactly one push after the window', async () => {
    await world({ tencent_push: { enabled: true, batch_linger: '0ms', kinds: ['activity_notice'], digest: { activity_notice: { window: '2s' } } } });
    const w = windowEndingIn(5);
    await call('SetQuietHours', { caller: user, quiet_hours: { time_zone: ZONE, windows: [{ start: w.start, end: w.end }] } });
    await insertActivityRows(env!.owner, env!.config.activity_database, [1, 2, 3, 4, 5].map(activity));
    await waitFor(
      () => statuses(env!),
      (c) => c['tencent_push:deferred'] === 5 && c['inbox:delivered'] === 5,
      5_000,
      'all five held',
    );
    await waitFor(
      () => statuses(env!),
      (c) => c['tencent_push:delivered'] === 1 && c['tencent_push:digested'] === 4,
      15_000,
      'one summary',
    );
    const pushes = env!.fakeIm.pushes();
    expect(pushes).toHaveLength(1);
    expect(JSON.parse(pushes[0]!.offlinePush.Ext as string)).toMatchObject({ digest_count: 5 });
    expect(pushes[0]!.receivedAtMs).toBeGreaterThanOrEqual(w.untilMs);
  });
});
