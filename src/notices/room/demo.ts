import { randomUUID } from 'node:crypto';
import type { Pool } from 'mysql2/promise';
import { Producer } from 'rocketmq-client-nodejs';
import type { Logger } from 'pino';
import type { NoticeConfig } from '../../config/schema.ts';
import { quoteIdentifier } from '../../platform/mysql.ts';
import { withDeadline } from '../../platform/deadline.ts';
import type { DemoContext, DemoWriter } from '../types.ts';

/**
 * Demo traffic only: plays room-service. Commits RoomUserKicked and RoomRocketRewardGranted (and, to show skipping,
 * RoomCreated) rows to room_outbox and, with a publisher, publishes the notice events to hyapp_room_outbox like
 * room-service's relay does.
 */
export interface KickPublisher {
  publish(fact: RoomFact): Promise<void>;
  close(): Promise<void>;
}

interface RoomFact {
  event_id: string;
  event_type: string;
  app_code: string;
  room_id: string;
  payload: Record<string, unknown>;
  created_at_ms: number;
}

export async function writeDemoRoomRows(pool: Pool, roomDatabase: string, count: number, publisher?: KickPublisher, nowMs = Date.now()): Promise<number> {
  const facts: RoomFact[] = Array.from({ length: count }, (_, i) => {
    const room = `room_${100 + Math.floor(Math.random() * 20)}`;
    if (Math.random() < 0.2)
      return {
        event_id: `rev_${randomUUID()}`,
        event_type: 'RoomCreated',
        app_code: 'lalu',
        room_id: room,
        payload: { owner_user_id: '10001' },
        created_at_ms: nowMs,
      };
    if (Math.random() < 0.25) {
      return {
        event_id: `rev_${randomUUID()}`,
        event_type: 'RoomRocketRewardGranted',
        app_code: 'lalu',
        room_id: room,
        created_at_ms: nowMs,
        payload: {
          reward_user_id: String(30000 + Math.floor(Math.random() * 100)),
          rocket_level: 1 + Math.floor(Math.random() * 5),
          rocket_id: `rocket_${randomUUID().slice(0, 8)}`,
          reward_items: [{ resource_id: 301, name: 'rocket chest', count: 1 }],
        },
      };
    }
    return {
      event_id: `rev_${randomUUID()}`,
      event_type: 'RoomUserKicked',
      app_code: 'lalu',
      room_id: room,
      created_at_ms: nowMs,
      payload: {
        target_user_id: String(30000 + Math.floor(Math.random() * 100)),
        operator_user_id: '10001',
        reason: 'demo kick',
        ...(i % 2 ? { ban_until_ms: nowMs + 3_600_000 } : {}),
      },
    };
  });
  await pool.query(
    `INSERT INTO ${quoteIdentifier(roomDatabase)}.room_outbox (app_code, event_id, event_type, room_id, payload, created_at_ms) VALUES
      ${facts.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}`,
    facts.flatMap((f) => [f.app_code, f.event_id, f.event_type, f.room_id, JSON.stringify(f.payload), f.created_at_ms]),
  );
  if (publisher) for (const fact of facts.filter((f) => f.event_type !== 'RoomCreated')) await publisher.publish(fact);
  return facts.length;
}

/** A RocketMQ producer for the demo, with the MQ message contract: tag = event type, keys = event id. */
export async function startKickPublisher(config: NoticeConfig, logger: Logger): Promise<KickPublisher> {
  const mq = config.rocketmq;
  const topic = mq.room_outbox.topic;
  const producer = new Producer({
    endpoints: mq.endpoints,
    namespace: mq.namespace,
    sslEnabled: mq.ssl,
    requestTimeout: mq.request_timeout,
    topic,
    ...(mq.access_key ? { sessionCredentials: { accessKey: mq.access_key, accessSecret: mq.secret_key } } : {}),
    logger: { info: () => undefined, debug: () => undefined, warn: (m: unknown) => logger.warn(String(m)), error: (m: unknown) => logger.warn(String(m)) },
  });
  try {
    await withDeadline(producer.startup(), mq.startup_timeout, 'RocketMQ producer startup');
  } catch (err) {
    // A producer that did not start keeps its timers running; shut it down before the caller tries again.
    await withDeadline(producer.shutdown(), mq.startup_timeout, 'RocketMQ producer shutdown').catch(() => undefined);
    throw err;
  }
  return {
    async publish(fact) {
      await producer.send({ topic, tag: fact.event_type, keys: [fact.event_id], body: Buffer.from(JSON.stringify(fact)) });
    },
    async close() {
      await withDeadline(producer.shutdown(), mq.startup_timeout, 'RocketMQ producer shutdown').catch(() => undefined);
    },
  };
}

/**
 * The room demo writer: rows every tick from the first second; with `--publish-kicks` the MQ publisher connects in
 * the background (whatever RocketMQ is doing) and each notice event is also published once it is up.
 */
export function openRoomDemo(ctx: DemoContext): DemoWriter {
  let publisher: KickPublisher | undefined;
  let connecting: Promise<void> | null = null;
  const connect = () => {
    if (!ctx.flags.has('publish-kicks') || publisher || connecting) return;
    connecting = startKickPublisher(ctx.config, ctx.logger)
      .then(
        (p) => {
          publisher = p;
          ctx.logger.info('RocketMQ kick publisher connected');
        },
        (err: Error) => ctx.logger.warn({ err: err.message }, 'RocketMQ kick publisher not up yet; kicks still go to room_outbox; retrying'),
      )
      .finally(() => (connecting = null));
  };
  return {
    async write(count) {
      connect();
      return writeDemoRoomRows(ctx.pool, ctx.database, count, publisher);
    },
    async close() {
      await connecting;
      await publisher?.close();
    },
  };
}
