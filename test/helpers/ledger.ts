import pino from 'pino';
import type { Redis } from 'ioredis';
import type { NoticeConfig } from '../../src/config/schema.ts';
import type { ChannelContext } from '../../src/channels/types.ts';
import { channelRoutes } from '../../src/channels/routing.ts';
import { channelLedger } from '../../src/delivery/ledger-port.ts';
import type { Pool } from 'mysql2/promise';
import { BatchedLedger } from '../../src/ledger/batched-ledger.ts';
import { LedgerRepository } from '../../src/ledger/repository.ts';
import type { LedgerKey, LedgerRow } from '../../src/ledger/types.ts';

/** Claims a ledger row as a deliver worker does; throws when the claim is refused. */
export async function claimRow(pool: Pool, key: LedgerKey, workerId: string, lockTtlMs: number): Promise<LedgerRow> {
  const result = await new BatchedLedger(pool, workerId, () => lockTtlMs).claim(key);
  if (!result.claimed) throw new Error(`could not claim ${key.sourceEventId}`);
  return result.row;
}

/** The row as a deliver worker holds it: inserted pending, then claimed through the real ledger. */
export async function insertAndClaim(pool: Pool, row: LedgerRow, workerId: string, lockTtlMs: number): Promise<LedgerRow> {
  await new LedgerRepository(pool).insertIfAbsent([{ ...row, status: 'pending' }], Date.now());
  return claimRow(pool, row, workerId, lockTtlMs);
}

/** What a deliver process gives a channel, for tests that build one channel alone. */
export function channelContextFor(env: { config: NoticeConfig; notice: Pool; redis: Redis }, config: NoticeConfig = env.config): ChannelContext {
  return {
    config,
    routes: channelRoutes(config),
    pool: env.notice,
    redis: env.redis,
    ledger: channelLedger(new LedgerRepository(env.notice)),
    logger: pino({ level: 'silent' }),
  };
}
