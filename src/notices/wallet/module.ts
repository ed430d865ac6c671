import type { BlockOf } from '../../config/schema.ts';
import { outboxSourceShape } from '../../config/primitives.ts';
import { userOutboxDdl } from '../outbox-ddl.ts';
import type { SourceModule } from '../types.ts';
import { VIP_NOTICE, WALLET_NOTICE } from './mapping.ts';
import { WALLET_SOURCE_NAME, walletOutboxSource } from './source.ts';

const configShape = outboxSourceShape('wallet', 'hyapp_wallet');

// The core's config type lists this block without importing this module (src/config/schema.ts ModuleBlocks).
declare module '../../config/schema.ts' {
  interface ModuleBlocks extends BlockOf<typeof configShape> {}
}

/** wallet-service's outbox: balance changes and VIP activations. */
export const walletModule: SourceModule<typeof configShape> = {
  key: 'wallet',
  sourceName: WALLET_SOURCE_NAME,
  owner: 'wallet-service',
  table: 'wallet_outbox',
  configShape,
  noticeKinds: [WALLET_NOTICE, VIP_NOTICE],
  // Balances are state: never stale, behind kicks for the quota, and a newer balance makes an older one obsolete;
  // a VIP change is news and goes a little ahead.
  kindDefaults: { priority: { [WALLET_NOTICE]: 0, [VIP_NOTICE]: 20_000 }, supersedable: { WalletBalanceChanged: true } },
  outbox: (database, config) => walletOutboxSource(database, config.offline_push.language_field),
  ownerDdl: (db) => [userOutboxDdl(db, 'wallet_outbox')],
  demo: {
    share: 1,
    async open({ pool, database }) {
      const { writeDemoWalletRows } = await import('./demo.ts');
      return { write: (count) => writeDemoWalletRows(pool, database, count) };
    },
  },
};
