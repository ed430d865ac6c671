import { describe, expect, it } from 'vitest';
import { parseRoomMqMessage } from '../src/notices/room/mq-message.ts';
import { PROXY_MAX_AWAIT_MS, PROXY_MIN_INVISIBLE_MS } from '../src/config/schema.ts';
import { configSchema } from '../src/composition/schema.ts';
import { parseConfigText, ConfigError } from '../src/composition/load.ts';

const body = (fact: Record<string, unknown>) => Buffer.from(JSON.stringify(fact));
const kick = {
  event_id: 'rev_1',
  event_type: 'RoomUserKicked',
  app_code: 'lalu',
  room_id: 'r9',
  payload: { target_user_id: '42', operator_user_id: '7', reason: 'spam' },
  created_at_ms: 1800000000000,
};

describe('room MQ message mapping', () => {
  it('maps a kick to the room_outbox ledger key and the room_notice payload', () => {
    const parsed = parseRoomMqMessage(body(kick), 5);
    expect(parsed.kind).toBe('fact');
    if (parsed.kind !== 'fact') return;
    expect(parsed.fact.key).toEqual({ sourceName: 'room_outbox', appCode: 'lalu', sourceEventId: 'rev_1' });
    expect(parsed.fact.sourceCreatedAtMs).toBe(1800000000000);
    expect(parsed.fact.mapped).toEqual({
      kind: 'notice',
      eventType: 'RoomUserKicked',
      userId: '42',
      noticeKind: 'room_notice',
      payload:
        '{"event_type":"RoomUserKicked","event_id":"rev_1","app_code":"lalu","room_id":"r9","target_user_id":"42","operator_user_id":"7","reason":"spam","created_at_ms":1800000000000,"source_created_at_ms":1800000000000}',
    });
  });

  it('accepts integer user ids and int64 ban times exactly', () => {
    const parsed = parseRoomMqMessage(
      Buffer.from(
        '{"event_id":"e","event_type":"RoomUserKicked","app_code":"a","room_id":12,"payload":{"target_user_id":9007199254740993,"operator_user_id":1,"reason":"","ban_until_ms":9007199254740993},"created_at_ms":1}',
      ),
      2,
    );
    expect(parsed.kind === 'fact' && parsed.fact.mapped.kind === 'notice' && parsed.fact.mapped.payload).toContain('"target_user_id":"9007199254740993"');
    expect(parsed.kind === 'fact' && parsed.fact.mapped.kind === 'notice' && parsed.fact.mapped.payload).toContain('"ban_until_ms":9007199254740993');
  });

  it('skips other room events and calls unparseable bodies poison', () => {
    const other = parseRoomMqMessage(body({ ...kick, event_type: 'RoomCreated', payload: {} }), 1);
    expect(other.kind === 'fact' && other.fact.mapped.kind).toBe('skip');
    expect(parseRoomMqMessage(Buffer.from('nope'), 1)).toMatchObject({ kind: 'poison' });
    expect(parseRoomMqMessage(body({ event_type: 'RoomUserKicked' }), 1)).toMatchObject({ kind: 'poison' });
  });
});

describe('RocketMQ config', () => {
  it('defaults to values a real RocketMQ 5 proxy accepts', () => {
    const mq = configSchema.parse({ mysql: { url: 'mysql://x/y' }, redis: { url: 'redis://x' } }).rocketmq;
    expect(mq.room_outbox.invisible_duration).toBeGreaterThanOrEqual(PROXY_MIN_INVISIBLE_MS);
    expect(mq.room_outbox.await_duration).toBeLessThanOrEqual(PROXY_MAX_AWAIT_MS);
    expect(mq.room_outbox).toMatchObject({ topic: 'hyapp_room_outbox', consumer_group: 'hyapp-notice-room-outbox', consumer_max_reconsume_times: 16 });
  });

  it("explains the seed's name_servers key instead of accepting it silently", () => {
    try {
      parseConfigText('mysql: { url: "mysql://x/y" }\nredis: { url: "redis://x" }\nrocketmq: { enabled: true, name_servers: ["ns:9876"] }', 't', {});
      throw new Error('accepted');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).message).toContain('rocketmq.name_servers');
      expect((err as ConfigError).message).toContain('rocketmq.endpoints');
    }
  });
});
