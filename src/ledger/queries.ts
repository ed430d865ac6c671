import type { Pool, RowDataPacket } from 'mysql2/promise';
import { toLedgerRow } from './repository.ts';
import type { DeliveryStatus, LedgerRow } from './types.ts';

/** Read-only operator look-ups on the ledger, each served by an index. */
export class LedgerQueries {
  constructor(private readonly pool: Pool) {}

  /** idx_nde_event_id */
  async byEventId(eventId: string): Promise<LedgerRow[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT * FROM notice_delivery_events WHERE source_event_id = ? ORDER BY created_at_ms DESC LIMIT 100', [eventId]);
    return rows.map(toLedgerRow);
  }

  /** idx_nde_user, newest first */
  async byUserId(userId: string, limit = 50): Promise<LedgerRow[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT * FROM notice_delivery_events WHERE user_id = ? ORDER BY created_at_ms DESC LIMIT ?', [userId, limit]);
    return rows.map(toLedgerRow);
  }

  /** idx_nde_status_updated, newest first; `before` pages by updated_at_ms. */
  async byStatus(status: DeliveryStatus, options: { limit?: number; offset?: number; sourceName?: string; sinceMs?: number } = {}): Promise<{ rows: LedgerRow[]; total: number }> {
    const where = ['status = ?'];
    const params: unknown[] = [status];
    if (options.sourceName) {
      where.push('source_name = ?');
      params.push(options.sourceName);
    }
    if (options.sinceMs !== undefined) {
      where.push('updated_at_ms >= ?');
      params.push(options.sinceMs);
    }
    const clause = where.join(' AND ');
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT * FROM notice_delivery_events WHERE ${clause} ORDER BY updated_at_ms DESC LIMIT ? OFFSET ?`,
      [...params, options.limit ?? 50, options.offset ?? 0],
    );
    const [count] = await this.pool.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM notice_delivery_events WHERE ${clause}`, params);
    return { rows: rows.map(toLedgerRow), total: Number(count[0]?.n ?? 0) };
  }
}
