import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { ledgerStatusCounts } from './helpers/outbox.ts';
import { insertRoomRows, kick, mqBody, rocket } from './helpers/room.ts';
import { insertActivityRows } from './helpers/activity.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { FakeRocketMqProxy } from './helpers/fake-rocketmq-proxy.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let mq: FakeRocketMqProxy | undefined;

afterEach(async () => {
  await proc?.stop();
  await mq?.stop();
  await env?.close();
  proc = mq = env = undefined;
});

const sent = (e: TestEnv) => e.fakeIm.messages().map((m) => ({ ...JSON.parse(m.data), _to: m.toAccount, _ext: m.ext, _dup: m.duplicate }));
const ACTIVITY_ONLY = {
  wallet_notice_worker: { enabled: false },
  activity_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s' },
};

describe("a channel's limits are its own", () => {
  it('a SystemNotice too large for one IM message still reaches the inbox and the phone; only its C2C row fails, TOO_LARGE, with no request', async () => {
    env = await createTestEnv({ ...ACTIVITY_ONLY, inbox: { enabled: true }, tencent_push: { enabled: true, batch_linger: '10ms' } });
    const big = Array.from({ length: 40 }, (_, i) => [`k${i}`, 'z'.repeat(400)]);
    await insertActivityRows(env.owner, env.config.activity_database, [
      {
        event_id: 'aev_big',
        event_type: 'SystemNotice',
        user_id: '40100',
        payload: { title_key: 'notice.big.title', body_key: 'notice.big.body', params: Object.fromEntries(big) },
      },
    ]);
    proc = await startPipeline(env.config);
    const rows = async () =>
      (await env!.notice.query<any[]>('SELECT channel, status, last_error_code FROM notice_delivery_events ORDER BY channel'))[0].map(
        (r) => `${r.channel}:${r.status}:${r.last_error_code}`,
      );
    await waitFor(rows, (r) => r.length === 3 && r.every((x) => !x.includes(':pending:') && !x.includes(':delivering:')), 15_000, 'three rows final');
    expect(await rows()).toEqual(['inbox:delivered:null', 'tencent_im_c2c:failed:TOO_LARGE', 'tencent_push:delivered:null']);
    expect(env.fakeIm.getStats().requests).toBe(0);
    const [items] = await env.notice.query<any[]>('SELECT LENGTH(payload) AS n FROM notice_inbox_items');
    expect(Number(items[0].n)).toBeGreaterThan(12 * 1024);
  });
});

describe('activity notices (activity_outbox)', () => {
  it('sends each event type as activity_notice with its contract fields; skips unknown types; fails malformed rows with the reason', async () => {
    env = await createTestEnv(ACTIVITY_ONLY);
    await insertActivityRows(env.owner, env.config.activity_database, [
      {
        event_id: 'aev_1',
        event_type: 'ActivityRewardGranted',
        user_id: '40001',
        payload: { activity_id: 'act_spring', grant_id: 'g1', reward_items: [{ resource_id: 101, count: 1 }], internal_note: 'not for clients' },
      },
      {
        event_id: 'aev_2',
        event_type: 'TaskCompleted',
        user_id: '40002',
        payload: '{"task_id":"task_daily","progress":9007199254740993,"target":9007199254740993}',
      },
      {
        event_id: 'aev_3',
        event_type: 'SystemNotice',
        user_id: '40003',
        payload: { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body', params: { minutes: 30, start: '02:00' } },
      },
      { event_id: 'aev_4', event_type: 'ActivityViewed', user_id: '40004', payload: {} },
      { event_id: 'aev_5', event_type: 'TaskCompleted', user_id: '40005', payload: { task_id: 'task_daily', target: 5 } },
      { event_id: 'aev_6', event_type: 'SystemNotice', user_id: '40006', payload: { title_key: '<script>', body_key: 'b' } },
      { event_id: 'aev_7', event_type: 'ActivityRewardGranted', user_id: null, payload: { activity_id: 'a', reward_items: [] } },
    ]);
    proc = await startPipeline(env.config);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 3 && c.failed === 3,
      15_000,
      'three sent, three failed',
    );
    const messages = sent(env);
    expect(messages).toHaveLength(3);
    expect(messages.every((m) => m._ext === 'activity_notice')).toBe(true);
    const reward = messages.find((m) => m.event_id === 'aev_1')!;
    expect(reward._to).toBe('40001');
    expect(Object.keys(reward).filter((k) => !k.startsWith('_'))).toEqual([
      'event_type',
      'event_id',
      'app_code',
      'user_id',
      'activity_id',
      'reward_items',
      'grant_id',
      'created_at_ms',
      'source_created_at_ms',
    ]);
    expect(reward).toMatchObject({
      activity_id: 'act_spring',
      grant_id: 'g1',
      reward_items: [{ resource_id: 101, count: 1 }],
      source_created_at_ms: 1800000000000,
    });
    // int64 progress stays exact on the wire.
    const task = env.fakeIm.messages().find((m) => JSON.parse(m.data).event_id === 'aev_2')!;
    expect(task.data).toContain('"progress":9007199254740993');
    expect(messages.find((m) => m.event_id === 'aev_3')).toMatchObject({
      title_key: 'notice.maintenance.title',
      params: { minutes: 30, start: '02:00' },
      _to: '40003',
    });
    expect(proc.ingest!.pollers[0]!.stats.skipped).toBe(1);
    const [failed] = await env.notice.query<any[]>(
      "SELECT source_event_id, last_error FROM notice_delivery_events WHERE status = 'failed' ORDER BY source_event_id",
    );
    expect(failed.map((r) => [r.source_event_id, r.last_error])).toEqual([
      ['aev_5', expect.stringMatching(/TaskCompleted payload: progress/)],
      ['aev_6', expect.stringMatching(/SystemNotice payload: title_key: letters, digits/)],
      ['aev_7', 'user_id is missing'],
    ]);
  });
});

describe('room rocket rewards', () => {
  it('the room_outbox poller sends one room_notice to the rewarded user; kicks are unchanged; a reward without a user fails with the reason', async () => {
    env = await createTestEnv({
      wallet_notice_worker: { enabled: false },
      room_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s' },
    });
    await insertRoomRows(env.owner, env.config.room_database, [rocket(1), kick(2), rocket(3, { rocket_level: 2 })]);
    proc = await startPipeline(env.config);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 2 && c.failed === 1,
      15_000,
      'rocket + kick sent, bad rocket failed',
    );
    const messages = sent(env);
    const reward = messages.find((m) => m.event_id === 'rev_rocket_1')!;
    expect(reward).toMatchObject({
      _to: '50001',
      _ext: 'room_notice',
      event_type: 'RoomRocketRewardGranted',
      room_id: 'room_9',
      rocket_level: 3,
      rocket_id: 'r1',
      reward_items: [{ resource_id: 301, count: 1 }],
    });
    expect(Object.keys(reward).filter((k) => !k.startsWith('_'))).toEqual([
      'event_type',
      'event_id',
      'app_code',
      'room_id',
      'reward_user_id',
      'rocket_level',
      'reward_items',
      'rocket_id',
      'created_at_ms',
      'source_created_at_ms',
    ]);
    expect(messages.find((m) => m.event_id === 'rev_kick_2')).toMatchObject({ _to: '30002', event_type: 'RoomUserKicked' });
    const [failed] = await env.notice.query<any[]>("SELECT last_error FROM notice_delivery_events WHERE status = 'failed'");
    expect(failed[0].last_error).toMatch(/RoomRocketRewardGranted payload: reward_user_id/);
  });

  it('through RocketMQ too, and a reward that comes by both entries reaches the user once', async () => {
    mq = new FakeRocketMqProxy();
    await mq.start();
    env = await createTestEnv({
      wallet_notice_worker: { enabled: false },
      room_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s' },
      rocketmq: {
        enabled: true,
        endpoints: mq.endpoint,
        request_timeout: '3s',
        startup_timeout: '5s',
        room_outbox: { enabled: true, invisible_duration: '1s', await_duration: '1s' },
      },
    });
    proc = await startPipeline(env.config);
    mq.publish('hyapp_room_outbox', mqBody(rocket(5)), { tag: 'RoomRocketRewardGranted', keys: ['rev_rocket_5'] });
    await insertRoomRows(env.owner, env.config.room_database, [rocket(5)]);
    await waitFor(
      async () => mq!.acked.length,
      (n) => n === 1,
      15_000,
      'MQ message acked',
    );
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 1,
      15_000,
      'delivered',
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(sent(env).filter((m) => m.event_id === 'rev_rocket_5' && !m._dup)).toHaveLength(1);
  });
});
