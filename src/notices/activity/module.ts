import type { BlockOf } from '../../config/schema.ts';
import { outboxSourceShape } from '../../config/primitives.ts';
import { userOutboxDdl } from '../outbox-ddl.ts';
import type { SourceModule } from '../types.ts';
import { ACTIVITY_NOTICE } from './mapping.ts';
import { activityOutboxSource } from './source.ts';
import { ACTIVITY_SOURCE_NAME } from './mapping.ts';

const configShape = outboxSourceShape('activity', 'hyapp_activity');

// The core's config type lists this block without importing this module (src/config/schema.ts ModuleBlocks).
declare module '../../config/schema.ts' {
  interface ModuleBlocks extends BlockOf<typeof configShape> {}
}

/** activity-service's outbox: rewards, finished tasks, system notices. */
export const activityModule: SourceModule<typeof configShape> = {
  key: 'activity',
  sourceName: ACTIVITY_SOURCE_NAME,
  owner: 'activity-service',
  table: 'activity_outbox',
  configShape,
  noticeKinds: [ACTIVITY_NOTICE],
  kindDefaults: { priority: { [ACTIVITY_NOTICE]: 20_000 } },
  outbox: (database, config) => activityOutboxSource(database, config.offline_push.language_field),
  ownerDdl: (db) => [userOutboxDdl(db, 'activity_outbox')],
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
