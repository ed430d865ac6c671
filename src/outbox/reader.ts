import type { Pool, RowDataPacket } from 'mysql2/promise';
import { quoteIdentifier } from '../platform/mysql.ts';
import type { OutboxRow } from '../notices/types.ts';
import type { GapRange } from './gap-tracker.ts';
import type { IdRange } from './gap-watch.ts';
import type { OutboxSource } from './source.ts';

/** At most this many holes are re-checked per poll; the rest wait for the next one. */
const MAX_GAP_RANGES_PER_QUERY = 200;

/** Reads an owner outbox by primary key only, so each read costs the same however large the table grows. */
export class OutboxReader {
  private readonly select: string;
  private readonly table: string;

  constructor(private readonly pool: Pool, source: OutboxSource) {
    const columns = ['id', ...source.columns].map(quoteIdentifier).join(', ');
    this.table = `${quoteIdentifier(source.database)}.${quoteIdentifier(source.table)}`;
    this.select = `SELECT ${columns} FROM ${this.table}`;
  }

  /** One statement, hence one snapshot: ids missing between the returned ones are real holes at that moment. */
  async readAfter(highWaterId: number, limit: number): Promise<OutboxRow[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`${this.select} WHERE id > ? ORDER BY id LIMIT ?`, [highWaterId, limit]);
    return rows.map(toOutboxRow);
  }

  /** The newest row's id and creation time, for lag metrics (a primary-key read). */
  async newest(): Promise<{ id: number; createdAtMs: number | null } | null> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`SELECT id, created_at_ms FROM ${this.table} ORDER BY id DESC LIMIT 1`);
    const row = rows[0];
    return row ? { id: Number(row.id), createdAtMs: row.created_at_ms === null ? null : Number(row.created_at_ms) } : null;
  }

  /** Rows inside id ranges (open holes, or watched ones), by primary key; the first 200 ranges per statement. */
  async readGaps(gaps: ReadonlyArray<GapRange | IdRange>, limit: number): Promise<OutboxRow[]> {
    const ranges = gaps.slice(0, MAX_GAP_RANGES_PER_QUERY);
    if (ranges.length === 0) return [];
    const where = ranges.map(() => '(id BETWEEN ? AND ?)').join(' OR ');
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `${this.select} WHERE ${where} ORDER BY id LIMIT ?`,
      [...ranges.flatMap(([from, to]) => [from, to]), limit],
    );
    return rows.map(toOutboxRow);
  }
}

function toOutboxRow(row: RowDataPacket): OutboxRow {
  const id = Number(row.id);
  if (!Number.isSafeInteger(id)) throw new Error(`outbox id ${String(row.id)} is beyond 2^53`);
  return { ...row, id } as OutboxRow;
}
