import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from '../helpers/env.ts';
import { insertActivityRows } from '../helpers/activity.ts';
import { balanceChanged, insertWalletRows, vipActivated } from '../helpers/outbox.ts';
import { startPipeline } from '../helpers/pipeline.ts';
import { spawnNotice } from '../helpers/spawn.ts';
import { configSchema } from '../../src/composition/schema.ts';
import { CHANNEL_MODULES } from '../../src/channels/registry.ts';
import { dataIdOf } from '../../src/channels/tencent-push/channel.ts';
import { fitOfflinePush, offlinePushBytes, renderOfflinePush } from '../../src/tencent-im/offline-push.ts';
import type { ChannelOutcome, DeliveryChannel } from '../../src/channels/types.ts';
import type { LedgerRow } from '../../src/ledger/types.ts';
import { channelContextFor, insertAndClaim } from '../helpers/ledger.ts';
import type { NoticeProcess } from '../../cli/run-roles.ts';

const offlinePush = configSchema.parse({ mysql: { url: 'mysql://x/y' }, redis: { url: 'redis://x' } }).offline_push;
const row = (over: Partial<LedgerRow> = {}): LedgerRow => {
  const now = Date.now();
  return {
    sourceName: 'activity_outbox',
    appCode: 'lalu',
    sourceEventId: `p_${Math.random()}`,
    channel: 'tencent_push',
    eventType: 'SystemNotice',
    userId: '80001',
    noticeKind: 'activity_notice',
    status: 'delivering',
    attemptCount: 0,
    claimCount: 1,
    lockedBy: 'test',
    lockUntilMs: now + 20_000,
    nextRetryAtMs: null,
    lastErrorCode: null,
    lastError: null,
    payload: '{"title_key":"t","body_key":"b"}',
    providerRef: null,
    sourceRowId: 1,
    sourceCreatedAtMs: now,
    createdAtMs: now,
    updatedAtMs: now,
    deliveredAtMs: null,
    supersedeVersion: null,
    supersedeKey: null,
    supersededBy: null,
    ...over,
  };
};

describe('rendering a push (pure)', () => {
  it('fills the kind template in the payload language, keeps vendor classes private, and refuses kinds that must not push', () => {
    const vip = renderOfflinePush(offlinePush, {
      eventType: 'VipActivated',
      noticeKind: 'vip_notice',
      sourceEventId: 'e',
      payload: '{"vip_name":"VIP6","level":6,"language":"zh"}',
    });
    expect(vip).toMatchObject({
      push: true,
      info: {
        PushFlag: 0,
        Title: 'VIP VIP6',
        Desc: '你的 VIP 等级已变为 6。',
        AndroidInfo: { HuaWeiCategory: 'IM', OPPOCategory: 'IM', VIVOClassification: 1, HonorImportance: 'NORMAL' },
      },
    });
    if (vip.push) expect(JSON.parse(vip.info.Ext!)).toEqual({ kind: 'vip_notice', event_type: 'VipActivated' });
    expect(
      renderOfflinePush(offlinePush, {
        eventType: 'VipActivated',
        noticeKind: 'vip_notice',
        sourceEventId: 'e',
        payload: '{"vip_name":"V","level":1,"language":"fr"}',
      }),
    ).toMatchObject({ info: { Desc: 'Your VIP level is now 1.' } });
    expect(renderOfflinePush(offlinePush, { eventType: 'WalletBalanceChanged', noticeKind: 'wallet_notice', sourceEventId: 'e', payload: '{}' })).toMatchObject(
      { push: false, reason: expect.stringContaining('no_push_kinds') },
    );
    expect(renderOfflinePush(offlinePush, { eventType: 'X', noticeKind: 'other_notice', sourceEventId: 'e', payload: '{}' })).toMatchObject({
      push: false,
      reason: expect.stringContaining('no offline_push.templates entry'),
    });
    // Identical notices to different users render identically: that is what lets them share a call.
    const a = renderOfflinePush(offlinePush, { eventType: 'SystemNotice', noticeKind: 'activity_notice', sourceEventId: 'a', payload: '{"title_key":"t"}' });
    const b = renderOfflinePush(offlinePush, { eventType: 'SystemNotice', noticeKind: 'activity_notice', sourceEventId: 'b', payload: '{"title_key":"t"}' });
    expect(a).toEqual(b);
  });

  it('fits a push into what the 12 KB message leaves: the body is shortened first, and a message with no room goes without a push', () => {
    const info = { PushFlag: 0 as const, Title: '标题'.repeat(40), Desc: '很长的正文'.repeat(500), Ext: '{"kind":"activity_notice"}' };
    const fitted = fitOfflinePush(info, 11_000, 12 * 1024);
    expect(11_000 + offlinePushBytes(fitted)).toBeLessThanOrEqual(12 * 1024);
    expect(fitted.Desc!.endsWith('…')).toBe(true);
    expect(fitted.Title).toBe(info.Title);
    expect(fitOfflinePush(info, 12 * 1024, 12 * 1024)).toEqual({ PushFlag: 1 });
    expect(Buffer.byteLength(dataIdOf([row(), row()]))).toBe(64);
  });
});

let env: TestEnv | undefined;
let channel: DeliveryChannel | undefined;
let proc: NoticeProcess | undefined;
afterEach(async () => {
  await proc?.stop();
  channel?.close?.();
  await env?.close();
  env = channel = proc = undefined;
});

async function pushChannel(overrides: Record<string, unknown> = {}): Promise<DeliveryChannel> {
  env = await createTestEnv({ tencent_push: { enabled: true, request_timeout: '300ms', ...overrides } });
  const module = CHANNEL_MODULES.find((m) => m.name === 'tencent_push')!;
  channel = await module.create(channelContextFor(env));
  return channel;
}
/** A send as a deliver worker makes it: the row inserted and claimed in the real ledger first (the channel marks it). */
async function send(c: DeliveryChannel, r: LedgerRow, e: TestEnv = env!): Promise<ChannelOutcome> {
  const claimed = await insertAndClaim(e.notice, r, 'push-test', 20_000);
  return c.send(claimed, { lockUntilMs: claimed.lockUntilMs });
}

describe('the tencent_push channel against fake-im', () => {
  it('identical pushes share one call; ErrorList fails only its own account', async () => {
    // A linger long enough for any machine: the rows are claimed first, then handed over together as a worker's
    // batch would be, so what is measured is the sharing, not how fast 40 claims run next to a busy CPU.
    // The request timeout and the locks leave room for a starved machine (nice 19 beside a CPU hog): a 300 ms timeout
    // there ended the call before it was written, and no push was made at all.
    const c = await pushChannel({ batch_linger: '1s', request_timeout: '5s' });
    env!.fakeIm.setPushFaults({ not_imported: ['80007'] });
    const rows = Array.from({ length: 40 }, (_, i) => row({ userId: String(80000 + i) }));
    const claimed = await Promise.all(rows.map((r) => insertAndClaim(env!.notice, r, 'push-test', 120_000)));
    const outcomes = await Promise.all(claimed.map((r) => c.send(r, { lockUntilMs: r.lockUntilMs })));
    const pushes = env!.fakeIm.pushes();
    expect(pushes).toHaveLength(1);
    expect(pushes[0]!.accounts).toHaveLength(39);
    expect(pushes[0]!.dataId).toBe(dataIdOf(rows));
    expect(outcomes.filter((o) => o.kind === 'delivered')).toHaveLength(39);
    expect(outcomes[7]).toMatchObject({ kind: 'permanent', code: '70107' });
    expect(outcomes[0]).toMatchObject({ kind: 'delivered', ref: `push:${pushes[0]!.taskId}` });
  });

  it('different texts go in different calls; one account twice waits for the next call', async () => {
    const c = await pushChannel({ batch_linger: '30ms' });
    const vip = row({ eventType: 'VipActivated', noticeKind: 'vip_notice', payload: '{"vip_name":"V","level":2}' });
    await Promise.all([send(c, row()), send(c, row()), send(c, vip)]);
    const calls = env!.fakeIm.pushes().map((p) => p.accounts);
    expect(calls).toEqual(expect.arrayContaining([['80001'], ['80001'], ['80001']]));
    expect(calls).toHaveLength(3);
  });

  it('a request that may have reached Tencent is delivered_unconfirmed by default and retried with retry_ambiguous: true; definite failures retry either way', async () => {
    for (const retryAmbiguous of [false, true]) {
      const c = await pushChannel({ retry_ambiguous: retryAmbiguous, batch_linger: '0ms' });
      env!.fakeIm.setPushFaults({ reset_after_processing_rate: 1 });
      const reset = await send(c, row());
      expect(env!.fakeIm.pushes()).toHaveLength(1); // it did reach "Tencent"
      expect(reset.kind).toBe(retryAmbiguous ? 'retry' : 'unconfirmed');
      env!.fakeIm.setPushFaults({ timeout_rate: 1, timeout_ms: 600 });
      expect((await send(c, row())).kind).toBe(retryAmbiguous ? 'retry' : 'unconfirmed');
      env!.fakeIm.setPushFaults({ http_errors: 1 });
      expect(await send(c, row())).toMatchObject({ kind: 'retry', code: 'HTTP_502' });
      env!.fakeIm.setPushFaults({ errors: [{ code: 91000, count: 1 }] });
      expect(await send(c, row())).toMatchObject({ kind: 'retry', code: '91000' });
      env!.fakeIm.setPushFaults({});
      channel?.close?.();
      await env!.close();
      env = channel = undefined;
    }
    // Nothing listening: refused before anything was sent, so retried even with retry_ambiguous false.
    const c = await pushChannel({ batch_linger: '0ms' });
    channel?.close?.();
    const closed = await createTestEnv({
      tencent_im: { base_url: 'http://127.0.0.1:9' },
      tencent_push: { enabled: true, request_timeout: '300ms', batch_linger: '0ms' },
    });
    const refused = await CHANNEL_MODULES.find((m) => m.name === 'tencent_push')!.create(channelContextFor(closed));
    expect(await send(refused, row(), closed)).toMatchObject({ kind: 'retry', code: 'ECONNREFUSED' });
    refused.close?.();
    await closed.close();
    void c;
  });

  it('an activity notice reaches the user as a C2C message and a push, once each; a push outage leaves C2C untouched and drains after', async () => {
    env = await createTestEnv({
      wallet_notice_worker: { enabled: false },
      activity_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s', max_retry_count: 20 },
      tencent_push: { enabled: true, batch_linger: '10ms' },
    });
    env.fakeIm.setPushFaults({ http_errors: 1_000_000 });
    await insertActivityRows(
      env.owner,
      env.config.activity_database,
      Array.from({ length: 5 }, (_, i) => ({
        event_id: `aev_p${i}`,
        event_type: 'SystemNotice',
        user_id: String(90000 + i),
        payload: { title_key: 't', body_key: 'b' },
      })),
    );
    proc = await startPipeline(env.config);
    const byChannel = async () =>
      (await env!.notice.query<any[]>('SELECT channel, status, COUNT(*) AS n FROM notice_delivery_events GROUP BY channel, status ORDER BY channel, status'))[0]
        .map((r) => `${r.channel}:${r.status}:${r.n}`)
        .join();
    await waitFor(
      byChannel,
      (s) => s.includes('tencent_im_c2c:delivered:5') && s.includes('tencent_push:retryable'),
      15_000,
      'C2C delivered while push retries',
    );
    expect(env.fakeIm.pushes()).toHaveLength(0);
    env.fakeIm.setPushFaults({});
    await waitFor(byChannel, (s) => s === 'tencent_im_c2c:delivered:5,tencent_push:delivered:5', 20_000, 'push drains after the outage');
    expect(env.fakeIm.delivered()).toHaveLength(5);
    const pushed = env.fakeIm
      .pushes()
      .filter((p) => !p.duplicate)
      .flatMap((p) => p.accounts)
      .sort();
    expect(pushed).toEqual(['90000', '90001', '90002', '90003', '90004']);
    // The push channel sends the phone notification, so the C2C message carries none (one notification, not two).
    expect(env.fakeIm.delivered().map((m) => m.offlinePush)).toEqual(Array(5).fill({ PushFlag: 1 }));
  });

  it('a connection a proxy dropped while idle is never reused: the next push is sent, not left unconfirmed', async () => {
    const { TcpProxy } = await import('../helpers/tcp-proxy.ts');
    // A proxy that forgets connections idle for 800 ms and resets the next bytes sent on one (never forwarded).
    env = await createTestEnv({ tencent_push: { enabled: true, request_timeout: '300ms', batch_linger: '0ms' } });
    const fake = new URL(env.fakeImUrl);
    const proxy = new TcpProxy(fake.hostname, Number(fake.port), 800);
    await proxy.start();
    const module = CHANNEL_MODULES.find((m) => m.name === 'tencent_push')!;
    const viaProxy = { ...env.config, tencent_im: { ...env.config.tencent_im, base_url: `http://127.0.0.1:${proxy.port}`, idle_socket_timeout: 300 } };
    channel = await module.create(channelContextFor(env, viaProxy));
    try {
      expect((await send(channel, row())).kind).toBe('delivered');
      await new Promise((r) => setTimeout(r, 1200));
      // idle_socket_timeout (300 ms) closed our side first, so a new connection carries it.
      expect((await send(channel, row())).kind).toBe('delivered');
      expect(proxy.droppedIdle).toBe(0);
      expect(env.fakeIm.pushes()).toHaveLength(2);
    } finally {
      await proxy.down();
    }
  });

  it('operators see an event per channel, list failed pushes by channel and requeue only the push', async () => {
    const auth = { authorization: `Basic ${Buffer.from('ops:push-ops-password').toString('base64')}` };
    env = await createTestEnv({
      wallet_notice_worker: { enabled: false },
      activity_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s' },
      tencent_push: { enabled: true, batch_linger: '10ms' },
      dashboard: { port: 0, auth: { username: 'ops', password: 'push-ops-password' }, environment: { label: 'test', color: '#b00020' } },
    });
    // The account is not registered for pushes yet: TIMPush's ErrorList fails that account (70107); C2C is unaffected.
    env.fakeIm.setPushFaults({ not_imported: ['90100'] });
    await insertActivityRows(env.owner, env.config.activity_database, [
      { event_id: 'aev_ops', event_type: 'TaskCompleted', user_id: '90100', payload: { task_id: 'task_daily', progress: 5, target: 5 } },
    ]);
    proc = await startPipeline(env.config, ['ingest', 'deliver', 'dashboard']);
    const byChannel = async () =>
      (await env!.notice.query<any[]>('SELECT channel, status FROM notice_delivery_events ORDER BY channel'))[0].map((r) => `${r.channel}:${r.status}`).join();
    await waitFor(byChannel, (s) => s === 'tencent_im_c2c:delivered,tencent_push:failed', 15_000, 'C2C delivered, push dead-lettered');

    const inspect = spawnNotice(['inspect', 'aev_ops', '--output', 'json', '--config', env.configFile]);
    expect(await inspect.exited).toBe(0);
    const rows = JSON.parse(inspect.output().slice(inspect.output().indexOf('[')));
    expect(rows.map((r: any) => [r.channel, r.status, r.last_error_code, r.job?.state ?? r.job]).sort()).toEqual([
      ['tencent_im_c2c', 'delivered', null, 'none: a completed job is removed as it completes; the ledger row is the record'],
      ['tencent_push', 'failed', '70107', 'failed'],
    ]);

    const base = `http://127.0.0.1:${proc.dashboard!.port}/admin/api/notices`;
    const failed = async (channel: string) =>
      (await (await fetch(`${base}/failed?channel=${channel}`, { headers: auth })).json()) as { rows: Array<{ channel: string }>; total: number };
    expect(await failed('tencent_push')).toMatchObject({ total: 1, rows: [{ channel: 'tencent_push' }] });
    expect((await failed('tencent_im_c2c')).total).toBe(0);
    const bogus = await fetch(`${base}/failed?channel=sms`, { headers: auth });
    expect(bogus.status).toBe(400);
    expect(await bogus.text()).toContain('channel must be one of tencent_im_c2c, inbox, tencent_push');

    env.fakeIm.setPushFaults({});
    const none = spawnNotice(['requeue', '--status', 'failed', '--channel', 'tencent_im_c2c', '--yes', '--output', 'json', '--config', env.configFile]);
    expect(await none.exited).toBe(0);
    expect(JSON.parse(none.output().slice(none.output().indexOf('{')))).toMatchObject({ matched: 0, requeued: 0 });
    const requeue = spawnNotice(['requeue', '--status', 'failed', '--channel', 'tencent_push', '--yes', '--output', 'json', '--config', env.configFile]);
    expect(await requeue.exited).toBe(0);
    expect(JSON.parse(requeue.output().slice(requeue.output().indexOf('{')))).toMatchObject({ matched: 1, requeued: 1 });
    await waitFor(byChannel, (s) => s === 'tencent_im_c2c:delivered,tencent_push:delivered', 15_000, 'the push delivered after its requeue');
    // The C2C message was not sent again; the push went once.
    expect(env.fakeIm.delivered()).toHaveLength(1);
    expect(env.fakeIm.pushes().filter((p) => !p.duplicate && p.accounts.includes('90100'))).toHaveLength(1);
    const bad = spawnNotice(['requeue', '--status', 'failed', '--channel', 'sms', '--config', env.configFile]);
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toContain('--channel must be one of tencent_im_c2c, inbox, tencent_push, got "sms"');
  });

  it('without the push channel the C2C notice carries the rendered OfflinePushInfo; balance updates carry PushFlag 1', async () => {
    env = await createTestEnv({});
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1), vipActivated(2)]);
    proc = await startPipeline(env.config);
    await waitFor(
      async () => env!.fakeIm.delivered().length,
      (n) => n === 2,
      15_000,
    );
    const byExt = Object.fromEntries(env.fakeIm.delivered().map((m) => [m.ext, m.offlinePush]));
    expect(byExt.wallet_notice).toEqual({ PushFlag: 1 });
    expect(byExt.vip_notice).toMatchObject({
      PushFlag: 0,
      Title: 'VIP VIP6',
      Desc: 'Your VIP level is now 6.',
      AndroidInfo: { HuaWeiCategory: 'IM', VIVOCategory: 'IM' },
    });
    // The message's Data is the seed payload, untouched.
    expect(JSON.parse(env.fakeIm.delivered().find((m) => m.ext === 'vip_notice')!.data)).toMatchObject({ event_type: 'VipActivated', level: 6 });
  });
});
