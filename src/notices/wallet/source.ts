import { identifyOutboxRow, type OutboxSource } from '../../outbox/source.ts';
import { mapWalletOutboxRow } from './mapping.ts';

export const WALLET_SOURCE_NAME = 'wallet_outbox';

/** `{wallet_database}.wallet_outbox`, owned by wallet-service; read-only here. */
export function walletOutboxSource(walletDatabase: string, languageField = 'language'): OutboxSource {
  return {
    sourceName: WALLET_SOURCE_NAME,
    database: walletDatabase,
    table: 'wallet_outbox',
    columns: ['app_code', 'event_id', 'event_type', 'user_id', 'payload', 'created_at_ms'],
    identify: (row) => identifyOutboxRow('wallet_outbox', row),
    map: (row, recordedAtMs) => mapWalletOutboxRow(row, recordedAtMs, languageField),
  };
}
