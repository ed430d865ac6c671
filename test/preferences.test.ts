import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { freePort } from './helpers/ports.ts';
import { unary, refusal } from './helpers/grpc.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { insertWalletRows, vipActivated } from './helpers/outbox.ts';
import { insertActivityRows } from './helpers/activity.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { PREFERENCES_PROTO } from '../src/preferences/api.ts';

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

async function world(): Promise<void> {
  const apiPort = await freePort();
  env = await createTestEnv({
    inbox: { enabled: true, api_port: apiPort },
    // VIP notices are not pushed by the push channel, so their C2C message carries the phone notification.
    tencent_push: { enabled: true, batch_linger: '0ms', kinds: ['activity_notice'] },
    activity_notice_worker: { enabled: true, poll_interval: '50ms' },
  });
  proc = await startPipeline(env.config, ['ingest', 'deliver', 'inbox-api']);
  const pkg = grpc.loadPackageDefinition(await protoLoader.load(PREFERENCES_PROTO, { keepCase: true, longs: String, defaults: true })) as any;
  client = new pkg.notice.preferences.v1.PreferencesService(`127.0.0.1:${apiPort}`, grpc.credentials.createInsecure());
}

const alice = { app_code: 'lalu', user_id: '20001' };
const bob = { app_code: 'lalu', user_id: '20002' };
const choice = (prefs: Array<{ notice_kind: string; channel: string; enabled: boolean; mandatory: boolean }>, kind: string, channel: string) =>
  prefs.find((p) => p.notice_kind === kind && p.channel === channel);

describe('preferences (PreferencesService on the inbox API listener, a real gRPC client)', () => {
  it('a user turns pushes of a kind off: no push, no buzzing C2C, the inbox intact; a mandatory kind cannot be turned off; bad input is named', async () => {
    await world();
    const initial = await call('GetPreferences', { caller: alice });
    expect(choice(initial.preferences, 'vip_notice', 'tencent_push')).toEqual({
      notice_kind: 'vip_notice',
      channel: 'tencent_push',
      enabled: true,
      mandatory: false,
    });
    expect(choice(initial.preferences, 'room_notice', 'tencent_im_c2c')).toMatchObject({ enabled: true, mandatory: true });

    const updated = await call('UpdatePreferences', {
      caller: alice,
      preferences: [
        { notice_kind: 'activity_notice', channel: 'tencent_push', enabled: false },
        { notice_kind: 'vip_notice', channel: 'tencent_push', enabled: false },
      ],
    });
    expect(choice(updated.preferences, 'activity_notice', 'tencent_push')!.enabled).toBe(false);
    // Scoped to the caller: bob's are untouched.
    expect(choice((await call('GetPreferences', { caller: bob })).preferences, 'activity_notice', 'tencent_push')!.enabled).toBe(true);

    const mandatory = await refused('UpdatePreferences', {
      caller: alice,
      preferences: [{ notice_kind: 'room_notice', channel: 'tencent_im_c2c', enabled: false }],
    });
    expect(mandatory.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(mandatory.details).toBe('preferences[0]: room_notice is mandatory and cannot be turned off');
    const unknownKind = await refused('UpdatePreferences', { caller: alice, preferences: [{ notice_kind: 'spam_notice', channel: 'inbox', enabled: false }] });
    expect([unknownKind.code, unknownKind.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'preferences[0].notice_kind: unknown kind "spam_notice"']);
    const wrongChannel = await refused('UpdatePreferences', {
      caller: alice,
      preferences: [{ notice_kind: 'wallet_notice', channel: 'inbox', enabled: false }],
    });
    expect([wrongChannel.code, wrongChannel.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'preferences[0].channel: "inbox" does not carry wallet_notice']);
    const noCaller = await refused('GetPreferences', {});
    expect(noCaller.code).toBe(grpc.status.INVALID_ARGUMENT);

    // The notices: a VIP activation (C2C + inbox) and a system notice (C2C + inbox + push) for each of them.
    await insertWalletRows(env!.owner, env!.config.wallet_database, [vipActivated(1), vipActivated(2)]);
    await insertActivityRows(env!.owner, env!.config.activity_database, [
      { event_id: 'pref_a', event_type: 'SystemNotice', user_id: '20001', payload: { title_key: 't', body_key: 'b' } },
      { event_id: 'pref_b', event_type: 'SystemNotice', user_id: '20002', payload: { title_key: 't', body_key: 'b' } },
    ]);
    const rows = async () =>
      Object.fromEntries(
        (
          await env!.notice.query<any[]>(
            'SELECT CONCAT(user_id, ":", notice_kind, ":", channel) AS k, CONCAT(status, ":", COALESCE(last_error_code, "")) AS v FROM notice_delivery_events',
          )
        )[0].map((r) => [r.k, r.v]),
      );
    const final = await waitFor(
      rows,
      (r) => Object.keys(r).length === 10 && Object.values(r).every((v) => /^(delivered|suppressed)/.test(String(v))),
      15_000,
      'every row final',
    );
    expect(final).toEqual({
      '20001:vip_notice:tencent_im_c2c': 'delivered:',
      '20001:vip_notice:inbox': 'delivered:',
      '20002:vip_notice:tencent_im_c2c': 'delivered:',
      '20002:vip_notice:inbox': 'delivered:',
      '20001:activity_notice:tencent_im_c2c': 'delivered:',
      '20001:activity_notice:inbox': 'delivered:',
      '20001:activity_notice:tencent_push': 'suppressed:PREFERENCE',
      '20002:activity_notice:tencent_im_c2c': 'delivered:',
      '20002:activity_notice:inbox': 'delivered:',
      '20002:activity_notice:tencent_push': 'delivered:',
    });
    // No path buzzes alice's phone: no push, and her VIP message tells Tencent not to push it (PushFlag 1).
    expect(env!.fakeIm.pushes().filter((p) => p.accounts.includes('20001'))).toHaveLength(0);
    const vipTo = (user: string) => env!.fakeIm.messages().find((m) => m.toAccount === user && m.ext === 'vip_notice')!;
    expect(vipTo('20001').offlinePush).toEqual({ PushFlag: 1 });
    expect(vipTo('20002').offlinePush).toMatchObject({ PushFlag: 0, Title: expect.stringContaining('VIP') });
    // The suppressed row says why, in the metrics too.
    expect(await proc!.metrics.registry.metrics()).toMatch(
      /notice_deliveries_total\{source="activity_outbox",channel="tencent_push",notice_kind="activity_notice",outcome="suppressed",error_code="PREFERENCE"\} 1/,
    );
  });
});
