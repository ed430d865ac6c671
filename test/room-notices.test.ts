import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv, MYSQL_HOST, MYSQL_PORT, mysqlServerVia } from './helpers/env.ts';
import { ledgerStatusCounts } from './helpers/outbox.ts';
import { insertRoomRows, kick, mqBody, roomEvent } from './helpers/room.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { FakeRocketMqProxy } from './helpers/fake-rocketmq-proxy.ts';
import { TcpProxy } from './helpers/tcp-proxy.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

const TOPIC = 'hyapp_room_outbox';
let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let mq: FakeRocketMqProxy | undefined;
let dbProxy: TcpProxy | undefined;

afterEach(async () => {
  await proc?.stop(); // the consumer shuts down before the fake proxy goes away
  await mq?.stop();
  await dbProxy?.down();
  await env?.close();
  proc = mq = dbProxy = env = undefined;
});

function mqConfig(endpoint: string, extra: Record<string, unknown> = {}) {
  return {
    rocketmq: {
      enabled: true,
      endpoints: endpoint,
      request_timeout: '3s',
      startup_timeout: '5s',
      room_outbox: { enabled: true, invisible_duration: '1s', await_duration: '1s', receive_batch_size: 32, consumer_max_reconsume_times: 16, ...extra },
    },
    wallet_notice_worker: { enabled: false },
  };
}

async function startMq(): Promise<FakeRocketMqProxy> {
  mq = new FakeRocketMqProxy();
  await mq.start();
  return mq;
}

const data = (env: TestEnv) => env.fakeIm.messages().map((m) => ({ ...JSON.parse(m.data), _to: m.toAccount, _ext: m.ext, _dup: m.duplicate }));

describe('room kick notices', () => {
  it('the room_outbox poller sends one room_notice to the kicked user and skips other room events', async () => {
    env = await createTestEnv({
      wallet_notice_worker: { enabled: false },
      room_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s' },
    });
    await insertRoomRows(env.owner, env.config.room_database, [
      kick(1, { ban_until_ms: 1800000999999 }),
      roomEvent(2, 'RoomCreated'),
      kick(3),
      roomEvent(4, 'RoomGiftSent'),
    ]);
    proc = await startPipeline(env.config);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 2,
    );
    const messages = data(env);
    expect(messages).toHaveLength(2);
    const first = messages.find((m) => m.event_id === 'rev_kick_1')!;
    expect(first).toMatchObject({ _to: '30001', _ext: 'room_notice' });
    expect(Object.keys(first).filter((k) => !k.startsWith('_'))).toEqual([
      'event_type',
      'event_id',
      'app_code',
      'room_id',
      'target_user_id',
      'operator_user_id',
      'reason',
      'ban_until_ms',
      'created_at_ms',
      'source_created_at_ms',
    ]);
    expect(first).toMatchObject({
      event_type: 'RoomUserKicked',
      app_code: 'lalu',
      room_id: 'room_1',
      operator_user_id: '10001',
      reason: 'spam',
      ban_until_ms: 1800000999999,
      source_created_at_ms: 1800000000001,
    });
    expect(messages.find((m) => m.event_id === 'rev_kick_3')).not.toHaveProperty('ban_until_ms');
    expect(proc.ingest!.pollers[0]!.stats.skipped).toBe(2);
    // notice-service never writes the owner's table, not even status.
    const [rows] = await env.owner.query<any[]>(`SELECT DISTINCT status FROM \`${env.config.room_database}\`.room_outbox`);
    expect(rows.map((r) => r.status)).toEqual(['pending']);
  });

  it('the room_outbox poller survives an out-of-order commit', async () => {
    env = await createTestEnv({ wallet_notice_worker: { enabled: false }, room_notice_worker: { enabled: true, poll_interval: '50ms', gap_grace: '30s' } });
    const slow = await env.owner.getConnection();
    try {
      await slow.beginTransaction();
      await insertRoomRows(slow as never, env.config.room_database, [kick(1)]);
      await insertRoomRows(env.owner, env.config.room_database, [kick(2), kick(3)]);
      proc = await startPipeline(env.config);
      await waitFor(
        async () => env!.fakeIm.delivered().length,
        (n) => n === 2,
      );
      expect(proc.ingest!.pollers[0]!.cursor!.gaps.map(([a, b]) => [a, b])).toEqual([[1, 1]]);
      await slow.commit();
      await waitFor(
        async () => env!.fakeIm.delivered().length,
        (n) => n === 3,
      );
    } finally {
      slow.release();
    }
  });

  it('the MQ consumer records, enqueues, then acks; duplicate MQ messages send once', async () => {
    const proxy = await startMq();
    env = await createTestEnv(mqConfig(proxy.endpoint));
    proc = await startPipeline(env.config);
    const id = proxy.publish(TOPIC, mqBody(kick(1)), { tag: 'RoomUserKicked', keys: ['rev_kick_1'] });
    proxy.publish(TOPIC, mqBody(kick(1)), { tag: 'RoomUserKicked', keys: ['rev_kick_1'] }); // a producer retry
    proxy.publish(TOPIC, mqBody(roomEvent(2, 'RoomCreated')), { tag: 'RoomCreated', keys: ['rev_RoomCreated_2'] });
    await waitFor(
      async () => proxy.acked.length,
      (n) => n === 3,
      15_000,
      'three acks',
    );
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 1,
    );
    expect(proxy.acked).toContain(id);
    expect(proxy.pending()).toBe(0);
    expect(data(env)).toHaveLength(1);
    expect(data(env)[0]).toMatchObject({ event_id: 'rev_kick_1', _to: '30001', _ext: 'room_notice' });
    const [ledger] = await env.notice.query<any[]>('SELECT source_name, source_event_id, channel FROM notice_delivery_events');
    expect(ledger).toEqual([{ source_name: 'room_outbox', source_event_id: 'rev_kick_1', channel: 'tencent_im_c2c' }]);
  });

  it('does not ack while MySQL is unavailable; the message comes back with a higher attempt and is processed once MySQL returns', async () => {
    const proxy = await startMq();
    dbProxy = new TcpProxy(MYSQL_HOST, MYSQL_PORT);
    await dbProxy.start();
    env = await createTestEnv(mqConfig(proxy.endpoint), { mysqlServerForService: mysqlServerVia(dbProxy.port) });
    proc = await startPipeline(env.config);
    const consumer = proc.ingest!.consumers[0]!;
    await waitFor(
      async () => consumer.connected,
      (c) => c,
      10_000,
      'consumer connected',
    );
    await dbProxy.down();
    const id = proxy.publish(TOPIC, mqBody(kick(5)), { tag: 'RoomUserKicked', keys: ['rev_kick_5'] });
    await waitFor(
      async () => proxy.attemptsOf(id),
      (n) => n >= 2,
      15_000,
      'redelivery',
    );
    expect(proxy.acked).toEqual([]);
    expect(consumer.stats.recordFailures).toBeGreaterThanOrEqual(1);
    await dbProxy.up();
    await waitFor(
      async () => proxy.acked,
      (a) => a.includes(id),
      20_000,
      'ack after MySQL is back',
    );
    await waitFor(
      async () => env!.fakeIm.delivered().length,
      (n) => n === 1,
      20_000,
    );
    expect(env.fakeIm.messages()).toHaveLength(1);
  });

  it('records poison messages in notice_rejected_messages and acks them', async () => {
    const proxy = await startMq();
    env = await createTestEnv(mqConfig(proxy.endpoint));
    proc = await startPipeline(env.config);
    const notJson = proxy.publish(TOPIC, 'kick!{', { tag: 'RoomUserKicked', keys: ['k1'] });
    const missing = proxy.publish(TOPIC, JSON.stringify({ event_type: 'RoomUserKicked', payload: {} }), { tag: 'RoomUserKicked' });
    const badUtf8 = proxy.publish(TOPIC, Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { tag: 'RoomUserKicked' });
    const badPayload = proxy.publish(TOPIC, mqBody({ ...kick(9), payload: { operator_user_id: '1' } }), { tag: 'RoomUserKicked' });
    await waitFor(
      async () => proxy.acked.length,
      (n) => n === 4,
      15_000,
      'four acks',
    );
    const [rejects] = await env.notice.query<any[]>(
      'SELECT message_id, topic, tag, message_keys, delivery_attempt, raw_body, reason FROM notice_rejected_messages ORDER BY id',
    );
    expect(rejects.map((r) => r.message_id).sort()).toEqual([notJson, missing, badUtf8].sort());
    const byId = Object.fromEntries(rejects.map((r) => [r.message_id, r]));
    expect(byId[notJson]).toMatchObject({ topic: TOPIC, tag: 'RoomUserKicked', message_keys: 'k1', delivery_attempt: 1 });
    expect(byId[notJson].reason).toContain('not JSON');
    expect(Buffer.from(byId[notJson].raw_body).toString()).toBe('kick!{');
    expect(byId[missing].reason).toMatch(/event_id/);
    expect(byId[badUtf8].reason).toContain('UTF-8');
    expect(Buffer.from(byId[badUtf8].raw_body)).toEqual(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]));
    // A well-formed envelope with a bad kick payload is a failed ledger row, visible like any malformed outbox row.
    expect(proxy.acked).toContain(badPayload);
    const [failed] = await env.notice.query<any[]>("SELECT source_event_id, last_error_code, last_error FROM notice_delivery_events WHERE status = 'failed'");
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ source_event_id: 'rev_kick_9', last_error_code: 'MALFORMED' });
    expect(failed[0].last_error).toContain('target_user_id');
  });

  it('gives up on a message still failing past consumer_max_reconsume_times: recorded as rejected, then acked', async () => {
    const proxy = await startMq();
    env = await createTestEnv(mqConfig(proxy.endpoint, { consumer_max_reconsume_times: 2 }));
    proc = await startPipeline(env.config);
    // Break the ledger for this one test: the insert fails for a reason other than availability.
    await env.notice.query('ALTER TABLE notice_delivery_events ADD COLUMN must_be_set INT NOT NULL');
    const id = proxy.publish(TOPIC, mqBody(kick(6)), { tag: 'RoomUserKicked' });
    await waitFor(
      async () => proxy.acked,
      (a) => a.includes(id),
      20_000,
      'ack after giving up',
    );
    expect(proxy.attemptsOf(id)).toBe(-1);
    const [rejects] = await env.notice.query<any[]>('SELECT message_id, delivery_attempt, reason FROM notice_rejected_messages');
    expect(rejects).toHaveLength(1);
    expect(rejects[0].delivery_attempt).toBe(3);
    expect(rejects[0].reason).toMatch(/still failing after 3 deliveries/);
  });

  it('survives the proxy going away and coming back, and a burst of 50001 errors', async () => {
    const proxy = await startMq();
    env = await createTestEnv(mqConfig(proxy.endpoint));
    proc = await startPipeline(env.config);
    const consumer = proc.ingest!.consumers[0]!;
    proxy.publish(TOPIC, mqBody(kick(1)), { tag: 'RoomUserKicked' });
    await waitFor(
      async () => env!.fakeIm.delivered().length,
      (n) => n === 1,
      15_000,
    );
    await proxy.stop();
    await new Promise((r) => setTimeout(r, 1500));
    await proxy.restart();
    proxy.receiveFailures = { code: 'INTERNAL_SERVER_ERROR', count: 4 };
    proxy.publish(TOPIC, mqBody(kick(2)), { tag: 'RoomUserKicked' });
    await waitFor(
      async () => env!.fakeIm.delivered().length,
      (n) => n === 2,
      30_000,
      'delivery after the proxy came back',
    );
    expect(consumer.stats.receiveFailures).toBeGreaterThan(0);
    expect(consumer.isRunning).toBe(true);
  });

  it('with the MQ consumer and the MySQL poller both on, 500 kicks make exactly 500 C2C messages', async () => {
    const proxy = await startMq();
    env = await createTestEnv({ ...mqConfig(proxy.endpoint), room_notice_worker: { enabled: true, poll_interval: '50ms', batch_size: 100 } });
    proc = await startPipeline(env.config);
    for (let batch = 0; batch < 10; batch++) {
      const facts = Array.from({ length: 50 }, (_, i) => kick(batch * 50 + i + 1));
      await insertRoomRows(env.owner, env.config.room_database, facts);
      for (const f of facts) proxy.publish(TOPIC, mqBody(f), { tag: 'RoomUserKicked', keys: [f.event_id] });
    }
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 500,
      30_000,
      '500 delivered',
    );
    await waitFor(
      async () => proxy.acked.length,
      (n) => n === 500,
      15_000,
      '500 acks',
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(env.fakeIm.messages()).toHaveLength(500);
    expect(new Set(env.fakeIm.messages().map((m) => JSON.parse(m.data).event_id)).size).toBe(500);
  });
});

describe('demo producer (docker compose `demo --publish-kicks`)', () => {
  it('publishes kicks and rocket rewards with the MQ contract (tag = event type, keys = event id) that the consumer turns into room notices', async () => {
    const { startKickPublisher, writeDemoRoomRows } = await import('../src/notices/room/demo.ts');
    const { createLogger } = await import('../src/platform/logger.ts');
    const proxy = await startMq();
    env = await createTestEnv(mqConfig(proxy.endpoint));
    proc = await startPipeline(env.config);
    const publisher = await startKickPublisher(env.config, createLogger('silent'));
    try {
      await writeDemoRoomRows(env.owner, env.config.room_database, 20, publisher);
    } finally {
      await publisher.close();
    }
    const [kicks] = await env.owner.query<any[]>(
      `SELECT event_id FROM \`${env.config.room_database}\`.room_outbox WHERE event_type IN ('RoomUserKicked', 'RoomRocketRewardGranted')`,
    );
    expect(kicks.length).toBeGreaterThan(0);
    expect(proxy.calls.sendMessage).toBe(kicks.length);
    await waitFor(
      async () => env!.fakeIm.delivered().length,
      (n) => n === kicks.length,
      15_000,
      'a room_notice per published event',
    );
    expect(new Set(env.fakeIm.delivered().map((m) => JSON.parse(m.data).event_id))).toEqual(new Set(kicks.map((k) => k.event_id)));
    expect(env.fakeIm.delivered().every((m) => m.ext === 'room_notice')).toBe(true);
  });
});
