import type { BlockOf } from '../../config/schema.ts';
import { mqSubscription, outboxSourceShape } from '../../config/primitives.ts';
import type { SourceModule } from '../types.ts';
import { ROOM_NOTICE, ROOM_SOURCE_NAME } from './mapping.ts';
import { parseRoomMqMessage } from './mq-message.ts';
import { roomOutboxSource } from './source.ts';

const configShape = outboxSourceShape('room', 'hyapp_room');
const mqShape = { room_outbox: mqSubscription({ topic: 'hyapp_room_outbox', consumer_group: 'hyapp-notice-room-outbox' }) };

// The core's config type lists this block without importing this module (src/config/schema.ts ModuleBlocks).
declare module '../../config/schema.ts' {
  interface ModuleBlocks extends BlockOf<typeof configShape> {}
  interface MqSubscriptions extends BlockOf<typeof mqShape> {}
}

/** room-service's outbox (kicks, rocket rewards), also published to RocketMQ topic hyapp_room_outbox. */
export const roomModule: SourceModule<typeof configShape, typeof mqShape> = {
  key: 'room',
  sourceName: ROOM_SOURCE_NAME,
  owner: 'room-service',
  table: 'room_outbox',
  configShape,
  noticeKinds: [ROOM_NOTICE],
  // A kick goes first for the quota, is worthless after 10 minutes, and a user cannot turn it off.
  kindDefaults: { priority: { [ROOM_NOTICE]: 60_000 }, expireAfter: { [ROOM_NOTICE]: 600_000 }, mandatoryKinds: [ROOM_NOTICE] },
  outbox: (database, config) => roomOutboxSource(database, config.offline_push.language_field),
  ownerDdl: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.room_outbox (
       id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
       app_code VARCHAR(32),
       event_id VARCHAR(191),
       event_type VARCHAR(64),
       room_id VARCHAR(64),
       payload JSON,
       status VARCHAR(16) NOT NULL DEFAULT 'pending',
       created_at_ms BIGINT,
       UNIQUE KEY uk_room_outbox_event (app_code, event_id)
     ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
  mqShape,
  mq: { configKey: 'room_outbox', parse: (body, recordedAtMs, config) => parseRoomMqMessage(body, recordedAtMs, config.offline_push.language_field) },
  demo: {
    flag: { name: 'room', description: 'also write room_outbox rows (kicks and other room events)' },
    options: [{ name: 'publish-kicks', description: 'also publish each room notice event to the RocketMQ topic, like room-service' }],
    share: 0.2,
    async open(ctx) {
      return (await import('./demo.ts')).openRoomDemo(ctx);
    },
  },
};
