import { describe, expect, it } from 'vitest';
import { mapWalletOutboxRow } from '../src/notices/wallet/mapping.ts';

const row = (over: Record<string, unknown> = {}) => ({
  id: 7,
  app_code: 'lalu',
  event_id: 'tx_xxx:WalletBalanceChanged:10001:COIN',
  event_type: 'WalletBalanceChanged',
  user_id: '10001',
  created_at_ms: 1710000000000,
  payload:
    '{"transaction_id":"tx_xxx","command_id":"gift_cmd_001","asset_type":"COIN","available_delta":-9900,"frozen_delta":0,"available_after":1123123,"frozen_after":0,"balance_version":18,"metadata":{}}',
  ...over,
});

describe('wallet notice mapping', () => {
  it('builds the seed WalletBalanceChanged payload, fields in the documented order', () => {
    const mapped = mapWalletOutboxRow(row(), 1710000000123);
    // Recorded again later (its ledger row lost in a failover): byte for byte the same message.
    expect(mapWalletOutboxRow(row(), 1710009999999)).toEqual(mapped);
    expect(mapped.kind).toBe('notice');
    if (mapped.kind !== 'notice') return;
    expect(mapped.noticeKind).toBe('wallet_notice');
    expect(mapped.userId).toBe('10001');
    expect(mapped.payload).toBe(
      '{"event_type":"WalletBalanceChanged","event_id":"tx_xxx:WalletBalanceChanged:10001:COIN","app_code":"lalu","transaction_id":"tx_xxx","command_id":"gift_cmd_001","user_id":"10001","asset_type":"COIN","available_delta":-9900,"frozen_delta":0,"available_after":1123123,"frozen_after":0,"balance_version":18,"created_at_ms":1710000000000,"source_created_at_ms":1710000000000,"metadata":{}}',
    );
  });

  it('keeps int64 values beyond 2^53 exact', () => {
    const payload =
      '{"transaction_id":"t","command_id":"c","asset_type":"COIN","available_delta":-9007199254740993,"frozen_delta":0,"available_after":9223372036854775807,"frozen_after":0,"balance_version":9007199254740993,"metadata":{"big":12345678901234567890}}';
    const mapped = mapWalletOutboxRow(row({ payload }), 1);
    expect(mapped.kind).toBe('notice');
    if (mapped.kind !== 'notice') return;
    expect(mapped.payload).toContain('"available_delta":-9007199254740993');
    expect(mapped.payload).toContain('"available_after":9223372036854775807');
    expect(mapped.payload).toContain('"balance_version":9007199254740993');
    expect(mapped.payload).toContain('"big":12345678901234567890');
  });

  it('builds the VipActivated payload with Ext vip_notice', () => {
    const payload = JSON.stringify({
      transaction_id: 'wtx_xxx',
      command_id: 'vip_purchase_10001_6_1790000000000',
      source: 'vip_purchase',
      action: 'upgrade',
      previous_level: 3,
      level: 6,
      vip_name: 'VIP6',
      started_at_ms: 1790000000000,
      expires_at_ms: 1792592000000,
      reward_resource_group_id: 101,
      resource_grant_id: 'rgr_xxx',
      reward_items: [],
    });
    const mapped = mapWalletOutboxRow(row({ event_type: 'VipActivated', event_id: 'wev_xxx', payload, created_at_ms: 1790000000000 }), 5);
    expect(mapped.kind).toBe('notice');
    if (mapped.kind !== 'notice') return;
    expect(mapped.noticeKind).toBe('vip_notice');
    expect(JSON.parse(mapped.payload)).toEqual({
      event_type: 'VipActivated',
      event_id: 'wev_xxx',
      app_code: 'lalu',
      transaction_id: 'wtx_xxx',
      command_id: 'vip_purchase_10001_6_1790000000000',
      user_id: '10001',
      asset_type: 'VIP',
      source: 'vip_purchase',
      action: 'upgrade',
      previous_level: 3,
      level: 6,
      vip_name: 'VIP6',
      started_at_ms: 1790000000000,
      expires_at_ms: 1792592000000,
      reward_resource_group_id: 101,
      resource_grant_id: 'rgr_xxx',
      reward_items: [],
      created_at_ms: 1790000000000, // the owner row's, not the clock: a fact recorded again is the same message
      source_created_at_ms: 1790000000000,
    });
  });

  it('skips event types it does not handle', () => {
    expect(mapWalletOutboxRow(row({ event_type: 'WalletFrozen' }), 1)).toEqual({ kind: 'skip', eventType: 'WalletFrozen' });
  });

  it("leaves IM's 12 KB message limit to the C2C channel: a larger payload maps to a notice", () => {
    expect(mapWalletOutboxRow(row({ payload: row().payload.replace('"metadata":{}', `"metadata":{"blob":"${'x'.repeat(13_000)}"}`) }), 1).kind).toBe('notice');
  });

  it.each([
    ['missing user_id', { user_id: null }, 'user_id is missing'],
    ['payload not JSON', { payload: '{"transaction_id": ' }, 'payload is not valid JSON'],
    ['payload a JSON string', { payload: '"hello"' }, 'WalletBalanceChanged payload'],
    ['unknown asset type', { payload: row().payload.replace('COIN', 'BITCOIN') }, 'asset_type'],
    ['wrong type', { payload: row().payload.replace('"balance_version":18', '"balance_version":"18; DROP TABLE x"') }, 'balance_version'],
    ['float amount', { payload: row().payload.replace('-9900', '-99.5') }, 'available_delta'],
    ['deeply nested', { payload: row().payload.replace('"metadata":{}', `"metadata":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`) }, ''],
  ])('marks a row with %s as malformed, with a reason', (_name, over, reason) => {
    const mapped = mapWalletOutboxRow(row(over), 1);
    expect(mapped.kind).toBe('malformed');
    if (mapped.kind === 'malformed') expect(mapped.reason).toContain(reason);
  });
});
