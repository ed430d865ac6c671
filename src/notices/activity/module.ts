import { outboxSourceShape } from '../../config/primitives.ts';
import type { SourceModule } from '../types.ts';
import { ACTIVITY_NOTICE } from './mapping.ts';
import { activityOutboxSource } from './source.ts';
import { ACTIVITY_SOURCE_NAME } from './mapping.ts';

const configShape = outboxSourceShape('activity', 'hyapp_activity');

/** activity-service's outbox: rewards, finished tasks, system notices. */
export const activityModule: SourceModule<typeof configShape> = {
  key: 'activity',
  sourceName: ACTIVITY_SOURCE_NAME,
  owner: 'activity-service',
  table: 'activity_outbox',
  configShape,
  noticeKinds: [ACTIVITY_NOTICE],
  outbox: (database, config) => activityOutboxSource(database, config.offline_push.language_field),
  ownerDdl: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.activity_outbox (
       id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
       app_code VARCHAR(32),
       event_id VARCHAR(191),
       event_type VARCHAR(64),
       user_id VARCHAR(64),
       payload JSON,
       created_at_ms BIGINT,
       UNIQUE KEY uk_activity_outbox_event (app_code, event_id)
     ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
  demo: {
    flag: { name: 'activity', description: 'also write activity_outbox rows (rewards, finished tasks, system notices)' },
    share: 0.2,
    async open({ pool, database }) {
      const { writeDemoActivityRows } = await import('./demo.ts');
      // The README's example user (10001) gets a system notice in the first batch: its inbox has an item at once.
      let first = true;
      return {
        write: (count) => {
          const written = writeDemoActivityRows(pool, database, count, Date.now(), first ? '10001' : undefined);
          first = false;
          return written;
        },
      };
    },
  },
};
