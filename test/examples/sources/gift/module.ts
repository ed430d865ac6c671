import { identifyOutboxRow } from '../../../../src/outbox/source.ts';
import { userOutboxDdl } from '../../../../src/notices/outbox-ddl.ts';
import { outboxSourceShape } from '../../../../src/config/primitives.ts';
import type { SourceModule } from '../../../../src/notices/types.ts';
import { GIFT_NOTICE, GIFT_SOURCE_NAME, mapGiftOutboxRow } from './mapping.ts';

const configShape = outboxSourceShape('gift', 'hyapp_gift');

/** The example fourth source, gift-service's outbox: one folder, and one line in test/examples/registry.ts. */
export const giftModule: SourceModule<typeof configShape> = {
  key: 'gift',
  sourceName: GIFT_SOURCE_NAME,
  owner: 'gift-service',
  table: 'gift_outbox',
  configShape,
  noticeKinds: [GIFT_NOTICE],
  outbox: (database) => ({
    sourceName: GIFT_SOURCE_NAME,
    database,
    table: 'gift_outbox',
    columns: ['app_code', 'event_id', 'event_type', 'user_id', 'payload', 'created_at_ms'],
    identify: (row) => identifyOutboxRow('gift_outbox', row),
    map: (row, recordedAtMs) => mapGiftOutboxRow(row, recordedAtMs),
  }),
  ownerDdl: (db) => [userOutboxDdl(db, 'gift_outbox')],
};
