import type { Pool, PoolConnection } from 'mysql2/promise';

export interface WalletRow {
  app_code?: string | null;
  event_id: string | null;
  event_type: string;
  user_id: string | null;
  payload: string;
  created_at_ms?: number;
}

export function balanceChanged(n: number, extra: Record<string, unknown> = {}): WalletRow {
  return {
    app_code: 'lalu',
    event_id: `tx_${n}:WalletBalanceChanged:${10000 + (n % 50)}:COIN`,
    event_type: 'WalletBalanceChanged',
    user_id: String(10000 + (n % 50)),
    created_at_ms: 1710000000000 + n,
    payload: JSON.stringify({
      transaction_id: `tx_${n}`,
      command_id: `gift_cmd_${n}`,
      asset_type: 'COIN',
      available_delta: -100,
      frozen_delta: 0,
      available_after: 100000 - n,
      frozen_after: 0,
      balance_version: n,
      metadata: { n },
      ...extra,
    }),
  };
}

export function vipActivated(n: number): WalletRow {
  return {
    app_code: 'lalu',
    event_id: `wev_${n}`,
    event_type: 'VipActivated',
    user_id: String(20000 + n),
    created_at_ms: 1790000000000 + n,
    payload: JSON.stringify({
      transaction_id: `wtx_${n}`,
      command_id: `vip_purchase_${n}`,
      source: 'vip_purchase',
      action: 'upgrade',
      previous_level: 3,
      level: 6,
      vip_name: 'VIP6',
      started_at_ms: 1790000000000,
      expires_at_ms: 1792592000000,
      reward_resource_group_id: 101,
      resource_grant_id: `rgr_${n}`,
      reward_items: [],
    }),
  };
}

export async function insertWalletRows(db: Pool | PoolConnection, database: string, rows: readonly WalletRow[]): Promise<void> {
  if (rows.length === 0) return;
  const placeholders = rows.map(() => '(?, ?, ?, ?, ?, ?)').join(', ');
  await db.query(
    `INSERT INTO \`${database}\`.wallet_outbox (app_code, event_id, event_type, user_id, payload, created_at_ms) VALUES ${placeholders}`,
    rows.flatMap((r) => [r.app_code === undefined ? 'lalu' : r.app_code, r.event_id, r.event_type, r.user_id, r.payload, r.created_at_ms ?? Date.now()]),
  );
}

export async function ledgerStatusCounts(notice: Pool): Promise<Record<string, number>> {
  const [rows] = await notice.query<any[]>('SELECT status, COUNT(*) AS n FROM notice_delivery_events GROUP BY status');
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}
