import type { Pool } from 'mysql2/promise';
import { balanceChanged, insertWalletRows } from '../test/helpers/outbox.ts';

/** Commits `total` wallet rows from `connections` owner connections in chunks; returns when all are committed. */
export async function preload(pool: Pool, database: string, total: number, connections = 4, chunk = 500, offset = 0): Promise<void> {
  let next = offset;
  const end = offset + total;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < end) {
        const from = next;
        next = Math.min(end, next + chunk);
        await insertWalletRows(
          pool,
          database,
          Array.from({ length: next - from }, (_, i) => balanceChanged(from + i + 1)),
        );
      }
    }),
  );
}

/**
 * A steady stream: one row per transaction, `rate` rows/s spread over `connections`, recording each row's commit
 * time by event id (the clock the commit→send latency starts from).
 */
export async function steadyStream(pool: Pool, database: string, rate: number, seconds: number, connections = 4, offset = 0): Promise<Map<string, number>> {
  const committedAt = new Map<string, number>();
  const total = Math.round(rate * seconds);
  const started = Date.now();
  let next = offset;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const conn = await pool.getConnection();
      try {
        while (next < offset + total) {
          const n = ++next;
          const dueAt = started + ((n - offset) / rate) * 1000;
          const wait = dueAt - Date.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          const row = balanceChanged(n);
          await insertWalletRows(conn, database, [row]);
          committedAt.set(row.event_id!, Date.now());
        }
      } finally {
        conn.release();
      }
    }),
  );
  return committedAt;
}
