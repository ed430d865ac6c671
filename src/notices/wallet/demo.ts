import { randomUUID } from 'node:crypto';
import type { Pool } from 'mysql2/promise';
import { quoteIdentifier } from '../../platform/mysql.ts';

/**
 * Demo and benchmark traffic only: plays wallet-service by committing realistic wallet_outbox rows. The service
 * itself never writes an owner table; this lives here so `docker compose up` shows notices flowing.
 */
export async function writeDemoWalletRows(pool: Pool, walletDatabase: string, count: number, nowMs = Date.now()): Promise<number> {
  const rows = Array.from({ length: count }, () => demoWalletRow(nowMs));
  const placeholders = rows.map(() => '(?, ?, ?, ?, ?, ?)').join(', ');
  await pool.query(
    `INSERT INTO ${quoteIdentifier(walletDatabase)}.wallet_outbox (app_code, event_id, event_type, user_id, payload, created_at_ms) VALUES ${placeholders}`,
    rows.flatMap((r) => [r.app_code, r.event_id, r.event_type, r.user_id, r.payload, r.created_at_ms]),
  );
  return rows.length;
}

function demoWalletRow(nowMs: number) {
  const userId = String(10000 + Math.floor(Math.random() * 100));
  const tx = `tx_${randomUUID().slice(0, 12)}`;
  if (Math.random() < 0.1) {
    const level = 1 + Math.floor(Math.random() * 8);
    return {
      app_code: 'lalu',
      event_id: `wev_${randomUUID()}`,
      event_type: 'VipActivated',
      user_id: userId,
      created_at_ms: nowMs,
      payload: JSON.stringify({
        transaction_id: tx,
        command_id: `vip_purchase_${userId}_${level}_${nowMs}`,
        source: 'vip_purchase',
        action: 'upgrade',
        previous_level: level - 1,
        level,
        vip_name: `VIP${level}`,
        started_at_ms: nowMs,
        expires_at_ms: nowMs + 30 * 86_400_000,
        reward_resource_group_id: 100 + level,
        resource_grant_id: `rgr_${randomUUID().slice(0, 8)}`,
        reward_items: [],
      }),
    };
  }
  const delta = -100 * (1 + Math.floor(Math.random() * 99));
  return {
    app_code: 'lalu',
    event_id: `${tx}:WalletBalanceChanged:${userId}:COIN`,
    event_type: 'WalletBalanceChanged',
    user_id: userId,
    created_at_ms: nowMs,
    payload: JSON.stringify({
      transaction_id: tx,
      command_id: `gift_cmd_${randomUUID().slice(0, 8)}`,
      asset_type: 'COIN',
      available_delta: delta,
      frozen_delta: 0,
      available_after: 1_000_000 + delta,
      frozen_after: 0,
      balance_version: Math.floor(nowMs / 1000),
      metadata: { scene: 'room_gift' },
    }),
  };
}
