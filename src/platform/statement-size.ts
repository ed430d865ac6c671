import mysql, { type Pool } from 'mysql2/promise';

/**
 * Multi-row statements bounded by bytes as well as rows: the server refuses a statement over its
 * `max_allowed_packet` (MariaDB's default 16 MiB, MySQL 8's 64 MiB, often set lower), and a batch that always fails
 * that way stalls whatever writes it. The limit is read from the server once per pool; a statement is split so each
 * part stays under it with headroom, and a single row that cannot fit even alone is refused with a data error that
 * names both sizes, so the caller can record that row as failed and go on.
 */

/** What is left of max_allowed_packet for a statement's values: the SQL around them and the protocol's own bytes. */
export function budgetOf(maxAllowedPacket: number): number {
  return Math.max(1024, Math.floor(maxAllowedPacket * 0.9) - 4096);
}

const limits = new WeakMap<Pool, Promise<number>>();

/** The server's max_allowed_packet as this pool's connections see it, read once (again after forgetLimit). */
export function maxAllowedPacket(pool: Pool): Promise<number> {
  let limit = limits.get(pool);
  if (!limit) {
    limit = pool.query('SELECT @@max_allowed_packet AS m').then(([rows]) => Number((rows as Array<{ m: number | string }>)[0]!.m));
    limit.catch(() => limits.delete(pool));
    limits.set(pool, limit);
  }
  return limit;
}

/** After the server refused a packet as too large (its limit may have been lowered): read it again next time. */
export function forgetLimit(pool: Pool, err: unknown): void {
  if (isPacketTooLarge(err)) limits.delete(pool);
}

export function isPacketTooLarge(err: unknown): boolean {
  return (err as { errno?: number })?.errno === 1153 || (err as { code?: string })?.code === 'ER_NET_PACKET_TOO_LARGE';
}

/**
 * An upper bound of a value's bytes in the statement mysql2 formats: a UTF-16 unit is at most 3 UTF-8 bytes, and an
 * escaped ASCII character 2, plus quotes and a separator. Cheap enough for every row of ingest's hot path.
 */
export function valueBytesBound(value: unknown): number {
  if (typeof value === 'string') return value.length * 3 + 4;
  if (value === null || value === undefined) return 6;
  return 24;
}

/** Groups items, in order, so each group's estimated bytes stay within the budget; an item over it alone is a group of one. */
export function chunkByBytes<T>(items: readonly T[], bytesOf: (item: T) => number, budget: number): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let used = 0;
  for (const item of items) {
    const bytes = bytesOf(item);
    if (current.length > 0 && used + bytes > budget) {
      chunks.push(current);
      current = [];
      used = 0;
    }
    current.push(item);
    used += bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** A single row whose statement is over the server's limit: a data error (sqlState 22001), so it is recorded, not retried. */
export class StatementTooLargeError extends Error {
  readonly sqlState = '22001';
  readonly code = 'STATEMENT_TOO_LARGE';
  constructor(
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`the row is ${bytes} bytes as SQL, over the server's max_allowed_packet of ${limit} bytes`);
    this.name = 'StatementTooLargeError';
  }
}

/**
 * Runs `write` once per group of rows that fits the server's limit. A group of one whose estimate is over the budget
 * is measured exactly (the formatted statement) and refused with StatementTooLargeError when it cannot fit.
 */
export async function writeInChunks<T>(
  pool: Pool,
  rows: readonly T[],
  bytesOf: (row: T) => number,
  statementOf: (rows: readonly T[]) => { sql: string; params: unknown[] },
  write: (sql: string, params: unknown[]) => Promise<void>,
): Promise<void> {
  const limit = await maxAllowedPacket(pool);
  const budget = budgetOf(limit);
  for (const chunk of chunkByBytes(rows, bytesOf, budget)) {
    const { sql, params } = statementOf(chunk);
    if (chunk.length === 1 && bytesOf(chunk[0]!) > budget) {
      const exact = Buffer.byteLength(mysql.format(sql, params as never[]));
      if (exact > limit - 1024) throw new StatementTooLargeError(exact, limit);
    }
    try {
      await write(sql, params);
    } catch (err) {
      forgetLimit(pool, err);
      throw err;
    }
  }
}
