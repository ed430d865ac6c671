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
