import type { Pool, PoolConnection, RowDataPacket } from 'mysql2/promise';
import { parseRanges, type WatchChunk } from './gap-watch.ts';

const TABLE = 'notice_ingest_watched_gaps';

/** `notice_ingest_watched_gaps`: holes past gap_grace still re-checked for late commits, in chunks. */
export class GapWatchStore {
  constructor(private readonly pool: Pool) {}

  /** Idempotent: a chunk given up twice (a crash before the cursor saved) is kept once. */
  async insert(db: Pool | PoolConnection, sourceName: string, chunks: readonly WatchChunk[]): Promise<void> {
    if (chunks.length === 0) return;
    await db.query(
      `INSERT INTO ${TABLE} (source_name, from_id, to_id, ranges, hole_ids, first_seen_ms, next_check_at_ms, checks)
       VALUES ${chunks.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')} ON DUPLICATE KEY UPDATE source_name = source_name`,
      chunks.flatMap((c) => [sourceName, c.fromId, c.toId, JSON.stringify(c.ranges), c.holeIds, c.firstSeenMs, c.nextCheckAtMs, c.checks]),
    );
  }

  /** The chunks due by `nowMs`, soonest first (idx_niwg_due). */
  async due(sourceName: string, nowMs: number, limit: number): Promise<WatchChunk[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT from_id, to_id, ranges, hole_ids, first_seen_ms, next_check_at_ms, checks FROM ${TABLE}
        WHERE source_name = ? AND next_check_at_ms <= ? ORDER BY next_check_at_ms LIMIT ?`,
      [sourceName, nowMs, limit],
    );
    return rows.map((r) => ({
      fromId: Number(r.from_id),
      toId: Number(r.to_id),
      ranges: parseRanges(r.ranges),
      holeIds: Number(r.hole_ids),
      firstSeenMs: Number(r.first_seen_ms),
      nextCheckAtMs: Number(r.next_check_at_ms),
      checks: Number(r.checks),
    }));
  }

  /** When the next chunk falls due (an index-only read), or null when nothing is watched. */
  async nextDueMs(sourceName: string): Promise<number | null> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`SELECT MIN(next_check_at_ms) AS next FROM ${TABLE} WHERE source_name = ?`, [sourceName]);
    return rows[0]?.next === null || rows[0]?.next === undefined ? null : Number(rows[0].next);
  }

  async reschedule(sourceName: string, chunk: WatchChunk): Promise<void> {
    await this.pool.query(`UPDATE ${TABLE} SET ranges = ?, hole_ids = ?, next_check_at_ms = ?, checks = ? WHERE source_name = ? AND from_id = ?`, [
      JSON.stringify(chunk.ranges),
      chunk.holeIds,
      chunk.nextCheckAtMs,
      chunk.checks,
      sourceName,
      chunk.fromId,
    ]);
  }

  async remove(sourceName: string, fromId: number): Promise<void> {
    await this.pool.query(`DELETE FROM ${TABLE} WHERE source_name = ? AND from_id = ?`, [sourceName, fromId]);
  }

  /** Hole ids watched for a source (scrape time only). */
  async watchedIds(sourceName: string): Promise<number> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`SELECT COALESCE(SUM(hole_ids), 0) AS n FROM ${TABLE} WHERE source_name = ?`, [sourceName]);
    return Number(rows[0]?.n ?? 0);
  }
}
