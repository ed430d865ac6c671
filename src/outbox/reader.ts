import type { Pool, RowDataPacket } from 'mysql2/promise';
import { quoteIdentifier } from '../platform/mysql.ts';
import { LIMITS } from '../intake/fact-validation.ts';
import type { OutboxRow } from '../facts/types.ts';
import type { GapRange } from './gap-tracker.ts';
import type { IdRange } from './gap-watch.ts';
import type { OutboxSource } from './source.ts';

/** At most this many holes are re-checked per poll; the rest wait for the next one. */
const MAX_GAP_RANGES_PER_QUERY = 200;

/** Reads an owner outbox by primary key only, so each read costs the same however large the table grows. */
export class OutboxReader {
  private readonly select: string;
  private readonly table: string;
  private blockedAt: string | null = null;

  constructor(
    private readonly pool: Pool,
    source: OutboxSource,
  ) {
    // A payload is fetched only when it is within intake's bound (LIMITS.rawPayloadBytes); its size always comes along, so an 8 MB payload is
    // neither transferred nor parsed (payload_bytes tells the mapping why it is missing).
    const columns = ['id', ...source.columns]
      .map((c) =>
        c === 'payload' ? `IF(LENGTH(payload) > ${LIMITS.rawPayloadBytes}, NULL, payload) AS payload, LENGTH(payload) AS payload_bytes` : quoteIdentifier(c),
      )
      .join(', ');
    this.table = `${quoteIdentifier(source.database)}.${quoteIdentifier(source.table)}`;
    this.select = `SELECT ${columns} FROM ${this.table}`;
  }

  /** One statement, hence one snapshot: ids missing between the returned ones are real holes at that moment. */
  async readAfter(highWaterId: number, limit: number): Promise<OutboxRow[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`${this.select} WHERE id > ? ORDER BY id LIMIT ?`, [highWaterId, limit]);
    // Rows come in id order: the ones below an id too large to hold exactly are still read; the source stops there.
    const firstUnsafe = rows.findIndex((r) => !Number.isSafeInteger(Number(r.id)));
    this.blockedAt = firstUnsafe >= 0 ? String(rows[firstUnsafe]!.id) : null;
    return (firstUnsafe >= 0 ? rows.slice(0, firstUnsafe) : rows).map(toOutboxRow);
  }

  /** Up to `limit` rows at or below `id`, newest first (the failover check walks down from the cursor). */
  async readDown(id: number, limit: number): Promise<OutboxRow[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`${this.select} WHERE id <= ? ORDER BY id DESC LIMIT ?`, [id, limit]);
    return rows.filter((r) => Number.isSafeInteger(Number(r.id))).map(toOutboxRow);
  }

  /** The id past 2^53 the last readAfter stopped at, if any. */
  blockedId(): string | null {
    return this.blockedAt;
  }

  /** The newest row's id and creation time, for lag metrics (a primary-key read). */
  async newest(): Promise<{ id: number; createdAtMs: number | null } | null> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`SELECT id, created_at_ms FROM ${this.table} ORDER BY id DESC LIMIT 1`);
    const row = rows[0];
    return row ? { id: Number(row.id), createdAtMs: row.created_at_ms === null ? null : Number(row.created_at_ms) } : null;
  }

  /** Rows inside id ranges (open holes, or watched ones), by primary key; the first 200 ranges per statement. */
  /** created_at_ms of the first row above the cursor (a primary-key read), for the lag gauge; null if none or unset. */
  async oldestUnreadCreatedAt(highWaterId: number): Promise<number | null> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`SELECT created_at_ms FROM ${this.table} WHERE id > ? ORDER BY id LIMIT 1`, [highWaterId]);
    const value = rows[0]?.created_at_ms;
    return typeof value === 'number' && Number.isSafeInteger(value) ? value : null;
  }

  async readGaps(gaps: ReadonlyArray<GapRange | IdRange>, limit: number): Promise<OutboxRow[]> {
    const ranges = gaps.slice(0, MAX_GAP_RANGES_PER_QUERY);
    if (ranges.length === 0) return [];
    const where = ranges.map(() => '(id BETWEEN ? AND ?)').join(' OR ');
    const [rows] = await this.pool.query<RowDataPacket[]>(`${this.select} WHERE ${where} ORDER BY id LIMIT ?`, [
      ...ranges.flatMap(([from, to]) => [from, to]),
      limit,
    ]);
    return rows.map(toOutboxRow);
  }
}

/** Thrown when an outbox id cannot be held exactly; the source stops there and readiness says so. */
export class OutboxIdTooLargeError extends Error {
  constructor(id: unknown) {
    super(
      `outbox id ${String(id)} is beyond 2^53 (${Number.MAX_SAFE_INTEGER}), which notice-service cannot track exactly; ` +
        'the owner contract keeps AUTO_INCREMENT ids below it (docs/owner-contract.md). The source stops before that row: ' +
        "reset the owner table's AUTO_INCREMENT below 2^53 and re-insert the row with a smaller id",
    );
  }
}

function toOutboxRow(row: RowDataPacket): OutboxRow {
  const id = Number(row.id);
  if (!Number.isSafeInteger(id)) throw new OutboxIdTooLargeError(row.id);
  // The driver's own object, its id made a number: no copy of every row.
  row.id = id;
  return row as OutboxRow;
}
