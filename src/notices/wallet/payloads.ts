import { z } from 'zod';
import { int64 } from '../payload-json.ts';

/** Asset buckets the client keeps balances for; a row with another asset type is malformed, not guessed at. */
export const WALLET_ASSET_TYPES = ['COIN', 'DIAMOND', 'GOLD', 'POINT'] as const;

export const walletBalanceChangedPayload = z.looseObject({
  transaction_id: z.string().min(1),
  command_id: z.string(),
  asset_type: z.enum(WALLET_ASSET_TYPES),
  available_delta: int64,
  frozen_delta: int64,
  available_after: int64,
  frozen_after: int64,
  balance_version: int64,
  metadata: z.record(z.string(), z.unknown()).default({}),
});

export const VIP_SOURCES = ['vip_purchase', 'admin_grant', 'activity_grant'] as const;

export const vipActivatedPayload = z.looseObject({
  transaction_id: z.string().min(1),
  command_id: z.string(),
  source: z.enum(VIP_SOURCES),
  action: z.string().min(1),
  previous_level: int64,
  level: int64,
  vip_name: z.string(),
  started_at_ms: int64,
  expires_at_ms: int64,
  reward_resource_group_id: int64.nullable().default(null),
  resource_grant_id: z.string().nullable().default(null),
  reward_items: z.array(z.unknown()).default([]),
});
