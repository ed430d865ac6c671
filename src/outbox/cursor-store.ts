import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { parseGaps, serializeGaps, type CursorState } from './gap-tracker.ts';
import type { GapWatchStore } from './gap-watch-store.ts';
import type { WatchChunk } from './gap-watch.ts';

/**
 * `notice_ingest_cursors`: the position of each outbox source, and a lease so that one ingest process at a time
 * advances it. Every write is fenced by the lease owner, so a process that lost its lease cannot move the cursor.
 */
export class CursorStore {
  constructor(private readonly pool: Pool) {}

  /**
   * @param initialHighWaterId where a source without a cursor row starts (0 = the whole outbox; `start_from: latest`
   *   passes the current top id). An existing cursor is never moved by it.
   */
  async acquire(
    sourceName: string,
    owner: string,
    nowMs: number,
    leaseMs: number,
    initialHighWaterId: () => Promise<number> = async () => 0,
  ): Promise<boolean> {
    const [existing] = await this.pool.query<RowDataPacket[]>('SELECT 1 FROM notice_ingest_cursors WHERE source_name = ?', [sourceName]);
    if (existing.length === 0) {
      await this.pool.query(
        `INSERT INTO notice_ingest_cursors (source_name, high_water_id, open_gaps, lease_owner, lease_until_ms, updated_at_ms)
         VALUES (?, ?, '[]', NULL, 0, ?) ON DUPLICATE KEY UPDATE source_name = source_name`,
        [sourceName, await initialHighWaterId(), nowMs],
      );
    }
    const [result] = await this.pool.query<ResultSetHeader>(
      `UPDATE notice_ingest_cursors SET lease_owner = ?, lease_until_ms = ?
        WHERE source_name = ? AND (lease_owner = ? OR lease_owner IS NULL OR lease_until_ms < ?)`,
      [owner, nowMs + leaseMs, sourceName, owner, nowMs],
    );
    return result.affectedRows === 1;
  }

  async load(sourceName: string): Promise<CursorState> {
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT high_water_id, open_gaps, high_water_row FROM notice_ingest_cursors WHERE source_name = ?', [
      sourceName,
    ]);
    const row = rows[0];
    if (!row) return { highWaterId: 0, gaps: [], highWaterRow: null };
    const identity =
      row.high_water_row === null ? null : Buffer.isBuffer(row.high_water_row) ? row.high_water_row.toString('utf8') : String(row.high_water_row);
    return { highWaterId: Number(row.high_water_id), gaps: parseGaps(row.open_gaps), highWaterRow: identity };
  }

  /**
   * Saves the position and renews the lease; false means the lease was lost and nothing was written. Holes given up
   * in this step move to the late-commit watch in the same transaction, so none is dropped between the two tables.
   */
  async save(
    sourceName: string,
    owner: string,
    /** The high-water id this process saved (or loaded) last: a row holding another one was not written by it. */
    fromHighWaterId: number,
    state: CursorState,
    nowMs: number,
    leaseMs: number,
    watch?: { store: GapWatchStore; chunks: readonly WatchChunk[] },
  ): Promise<boolean> {
    const update = (db: Pool | PoolConnection) =>
      db.query<ResultSetHeader>(
        `UPDATE notice_ingest_cursors SET high_water_id = ?, open_gaps = ?, high_water_row = ?, lease_until_ms = ?, updated_at_ms = ?
          WHERE source_name = ? AND lease_owner = ? AND high_water_id = ?`,
        [state.highWaterId, serializeGaps(state.gaps), state.highWaterRow ?? null, nowMs + leaseMs, nowMs, sourceName, owner, fromHighWaterId],
      );
    if (!watch || watch.chunks.length === 0) return (await update(this.pool))[0].affectedRows === 1;
    const conn = await this.pool.getConnection();
    try {
      await conn.beginTransaction();
      await watch.store.insert(conn, sourceName, watch.chunks);
      const [result] = await update(conn);
      if (result.affectedRows !== 1) {
        await conn.rollback();
        return false;
      }
      await conn.commit();
      return true;
    } catch (err) {
      await conn.rollback().catch(() => undefined);
      throw err;
    } finally {
      conn.release();
    }
  }

  async release(sourceName: string, owner: string): Promise<void> {
    await this.pool.query('UPDATE notice_ingest_cursors SET lease_owner = NULL, lease_until_ms = 0 WHERE source_name = ? AND lease_owner = ?', [
      sourceName,
      owner,
    ]);
  }
}
