import { outboxSourceShape } from '../../config/primitives.ts';
import type { SourceModule } from '../types.ts';
import { VIP_NOTICE, WALLET_NOTICE } from './mapping.ts';
import { WALLET_SOURCE_NAME, walletOutboxSource } from './source.ts';

const configShape = outboxSourceShape('wallet', 'hyapp_wallet');

/** wallet-service's outbox: balance changes and VIP activations. */
export const walletModule: SourceModule<typeof configShape> = {
  key: 'wallet',
  sourceName: WALLET_SOURCE_NAME,
  owner: 'wallet-service',
  table: 'wallet_outbox',
  configShape,
  noticeKinds: [WALLET_NOTICE, VIP_NOTICE],
  outbox: (database, config) => walletOutboxSource(database, config.offline_push.language_field),
  ownerDdl: (db) => [
    `CREATE TABLE IF NOT EXISTS ${db}.wallet_outbox (
       id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
       app_code VARCHAR(32),
       event_id VARCHAR(191),
       event_type VARCHAR(64),
       user_id VARCHAR(64),
       payload JSON,
       created_at_ms BIGINT,
       UNIQUE KEY uk_wallet_outbox_event (app_code, event_id)
     ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
  demo: {
    share: 1,
    async open({ pool, database }) {
      const { writeDemoWalletRows } = await import('./demo.ts');
      return { write: (count) => writeDemoWalletRows(pool, database, count) };
    },
  },
};
