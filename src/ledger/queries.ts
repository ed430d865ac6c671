import type { Pool, RowDataPacket } from 'mysql2/promise';
import { toLedgerRow } from './repository.ts';
import { DELIVERY_STATUSES, type DeliveryStatus, type LedgerKey, type LedgerRow } from './types.ts';

export interface FailedFilter {
  sourceName?: string;
  channel?: string;
  sinceMs?: number;
  /** Only this recipient's rows. */
  userId?: string;
  /** Only rows whose last error is this code. */
  errorCode?: string;
  /** Only rows updated before this. */
  untilMs?: number;
  /** Only this notice kind's rows. */
  noticeKind?: string;
  /** Only this app's rows. */
  appCode?: string;
}

export interface FailedCursor extends LedgerKey {
  updatedAtMs: number;
}

/** Read-only operator look-ups on the ledger, each served by an index. */
export class LedgerQueries {
  constructor(private readonly pool: Pool) {}

  /** idx_nde_event_id */
  async byEventId(eventId: string): Promise<LedgerRow[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT * FROM notice_delivery_events WHERE source_event_id = ? ORDER BY created_at_ms DESC LIMIT 100',
      [eventId],
    );
    return rows.map(toLedgerRow);
  }

  /** idx_nde_user, newest first */
  async byUserId(userId: string, limit = 50): Promise<LedgerRow[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT * FROM notice_delivery_events WHERE user_id = ? ORDER BY created_at_ms DESC LIMIT ?', [
      userId,
      limit,
    ]);
    return rows.map(toLedgerRow);
  }

  /**
   * The ledger page's header, cheap whatever the ledger's size: per status, rows that reached it in the last
   * `windowMs` (a range on idx_nde_status_updated per status, counted up to `cap`); the oldest pending row's age;
   * deliveries in the last minute. Counts at the cap are shown as "cap+".
   */
  async glance(
    nowMs: number,
    windowMs = 3_600_000,
    cap = 10_000,
  ): Promise<{
    byStatus: Array<{ status: DeliveryStatus; channel: string; count: number; capped: boolean }>;
    oldestPendingAgeMs: number | null;
    deliveredLastMinute: Record<string, number>;
  }> {
    const byStatus: Array<{ status: DeliveryStatus; channel: string; count: number; capped: boolean }> = [];
    for (const status of DELIVERY_STATUSES) {
      const [rows] = await this.pool.query<RowDataPacket[]>(
        `SELECT channel, COUNT(*) AS n FROM (SELECT channel FROM notice_delivery_events FORCE INDEX (idx_nde_status_updated)
            WHERE status = ? AND updated_at_ms >= ? LIMIT ?) t GROUP BY channel`,
        [status, nowMs - windowMs, cap],
      );
      const total = rows.reduce((sum, r) => sum + Number(r.n), 0);
      for (const r of rows) byStatus.push({ status, channel: String(r.channel), count: Number(r.n), capped: total >= cap });
    }
    const [pending] = await this.pool.query<RowDataPacket[]>(
      "SELECT updated_at_ms FROM notice_delivery_events FORCE INDEX (idx_nde_status_updated) WHERE status = 'pending' ORDER BY updated_at_ms LIMIT 1",
    );
    const [minute] = await this.pool.query<RowDataPacket[]>(
      `SELECT channel, COUNT(*) AS n FROM notice_delivery_events FORCE INDEX (idx_nde_status_updated)
       WHERE status = 'delivered' AND updated_at_ms >= ? GROUP BY channel`,
      [nowMs - 60_000],
    );
    return {
      byStatus,
      oldestPendingAgeMs: pending[0] ? Math.max(0, nowMs - Number(pending[0].updated_at_ms)) : null,
      deliveredLastMinute: Object.fromEntries(minute.map((r) => [String(r.channel), Number(r.n)])),
    };
  }

  /**
   * Failed rows last updated before `beforeMs`, oldest first, after `after` (keyset on idx_nde_status_updated, whose
   * entries end with the primary key). A row requeued at or after `beforeMs` and failed again is never in the set.
   */
  async failedBefore(
    beforeMs: number,
    filter: FailedFilter,
    after: FailedCursor | null,
    limit: number,
  ): Promise<{ rows: LedgerRow[]; next: FailedCursor | null }> {
    const { where, params } = filterWhere(filter, ["status = 'failed'", 'updated_at_ms < ?'], [beforeMs]);
    if (after) {
      where.push('(updated_at_ms, source_name, app_code, source_event_id, channel) > (?, ?, ?, ?, ?)');
      params.push(after.updatedAtMs, after.sourceName, after.appCode, after.sourceEventId, after.channel);
    }
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT * FROM notice_delivery_events FORCE INDEX (idx_nde_status_updated) WHERE ${where.join(' AND ')}
        ORDER BY updated_at_ms, source_name, app_code, source_event_id, channel LIMIT ?`,
      [...params, limit],
    );
    return keysetPage(rows.map(toLedgerRow), limit);
  }

  /**
   * Rows in a status across every user, grouped by channel and last error code, largest group first: a range of
   * idx_nde_status_updated, counted up to `cap` rows (then the counts are a floor and `capped` says so).
   */
  async statusGroups(
    status: DeliveryStatus,
    filter: FailedFilter,
    cap = 100_000,
  ): Promise<{ groups: Array<{ channel: string; code: string | null; count: number; latestMs: number }>; capped: boolean }> {
    const { where, params } = filterWhere(filter, ['status = ?'], [status]);
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT channel, last_error_code AS code, COUNT(*) AS n, MAX(updated_at_ms) AS latest FROM (
         SELECT channel, last_error_code, updated_at_ms FROM notice_delivery_events FORCE INDEX (idx_nde_status_updated)
          WHERE ${where.join(' AND ')} ORDER BY updated_at_ms DESC LIMIT ?) t
        GROUP BY channel, last_error_code ORDER BY n DESC, latest DESC`,
      [...params, cap],
    );
    const groups = rows.map((r) => ({
      channel: String(r.channel),
      code: r.code === null ? null : String(r.code),
      count: Number(r.n),
      latestMs: Number(r.latest),
    }));
    return { groups, capped: groups.reduce((n, g) => n + g.count, 0) >= cap };
  }

  /** Rows in a status across every user, newest first, keyset-paged after `before` (idx_nde_status_updated). */
  async statusNewestFirst(
    status: DeliveryStatus,
    filter: FailedFilter,
    before: FailedCursor | null,
    limit: number,
  ): Promise<{ rows: LedgerRow[]; next: FailedCursor | null }> {
    const { where, params } = filterWhere(filter, ['status = ?'], [status]);
    if (before) {
      where.push('(updated_at_ms, source_name, app_code, source_event_id, channel) < (?, ?, ?, ?, ?)');
      params.push(before.updatedAtMs, before.sourceName, before.appCode, before.sourceEventId, before.channel);
    }
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT * FROM notice_delivery_events FORCE INDEX (idx_nde_status_updated) WHERE ${where.join(' AND ')}
        ORDER BY updated_at_ms DESC, source_name DESC, app_code DESC, source_event_id DESC, channel DESC LIMIT ?`,
      [...params, limit],
    );
    return keysetPage(rows.map(toLedgerRow), limit);
  }

  /** idx_nde_status_updated, newest first; `before` pages by updated_at_ms. */
  async byStatus(
    status: DeliveryStatus,
    options: { limit?: number; offset?: number; sourceName?: string; channel?: string; sinceMs?: number } = {},
  ): Promise<{ rows: LedgerRow[]; total: number }> {
    const { where, params } = filterWhere(options, ['status = ?'], [status]);
    const clause = where.join(' AND ');
    const [rows] = await this.pool.query<RowDataPacket[]>(`SELECT * FROM notice_delivery_events WHERE ${clause} ORDER BY updated_at_ms DESC LIMIT ? OFFSET ?`, [
      ...params,
      options.limit ?? 50,
      options.offset ?? 0,
    ]);
    const [count] = await this.pool.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM notice_delivery_events WHERE ${clause}`, params);
    return { rows: rows.map(toLedgerRow), total: Number(count[0]?.n ?? 0) };
  }
}

/** A page of rows in (updated_at_ms, key) order, and the cursor after its last row when it was full. */
function keysetPage(page: LedgerRow[], limit: number): { rows: LedgerRow[]; next: FailedCursor | null } {
  const last = page[page.length - 1];
  return {
    rows: page,
    next:
      last && page.length === limit
        ? { updatedAtMs: last.updatedAtMs, sourceName: last.sourceName, appCode: last.appCode, sourceEventId: last.sourceEventId, channel: last.channel }
        : null,
  };
}

/** The operator filters (source, channel, updated since) as SQL conditions after the given ones. */
function filterWhere(filter: FailedFilter, where: string[], params: unknown[]): { where: string[]; params: unknown[] } {
  if (filter.sourceName) {
    where.push('source_name = ?');
    params.push(filter.sourceName);
  }
  if (filter.channel) {
    where.push('channel = ?');
    params.push(filter.channel);
  }
  if (filter.sinceMs !== undefined) {
    where.push('updated_at_ms >= ?');
    params.push(filter.sinceMs);
  }
  if (filter.untilMs !== undefined) {
    where.push('updated_at_ms < ?');
    params.push(filter.untilMs);
  }
  if (filter.userId !== undefined) {
    where.push('user_id = ?');
    params.push(filter.userId);
  }
  if (filter.errorCode !== undefined) {
    where.push('last_error_code = ?');
    params.push(filter.errorCode);
  }
  if (filter.noticeKind !== undefined) {
    where.push('notice_kind = ?');
    params.push(filter.noticeKind);
  }
  if (filter.appCode !== undefined) {
    where.push('app_code = ?');
    params.push(filter.appCode);
  }
  return { where, params };
}

/**
 * Final outcomes per channel, status and minute since `sinceMs`: a covering range scan of idx_nde_status_updated
 * (its entries end with the primary key, channel included), one per status. For the dashboard's charts.
 */
export async function outcomesPerMinute(
  pool: Pool,
  statuses: readonly DeliveryStatus[],
  sinceMs: number,
): Promise<Array<{ channel: string; status: DeliveryStatus; minuteMs: number; count: number }>> {
  const out: Array<{ channel: string; status: DeliveryStatus; minuteMs: number; count: number }> = [];
  for (const status of statuses) {
    const [rows] = await pool.query<RowDataPacket[]>(
      `SELECT channel, FLOOR(updated_at_ms / 60000) AS m, COUNT(*) AS n FROM notice_delivery_events FORCE INDEX (idx_nde_status_updated)
        WHERE status = ? AND updated_at_ms >= ? GROUP BY channel, m`,
      [status, sinceMs],
    );
    for (const r of rows) out.push({ channel: String(r.channel), status, minuteMs: Number(r.m) * 60_000, count: Number(r.n) });
  }
  return out;
}

/**
 * Failures per channel and minute as they happened: the delivery history's `failed` and `poison` entries (a row
 * requeued and delivered since keeps its failure in the minute it failed), plus rows failed where no deliver
 * worker ever claimed them (refused at intake), from the ledger. idx_ndh_at and idx_nde_status_updated.
 */
export async function failuresPerMinute(pool: Pool, sinceMs: number): Promise<Array<{ channel: string; minuteMs: number; count: number }>> {
  const [history] = await pool.query<RowDataPacket[]>(
    `SELECT channel, FLOOR(at_ms / 60000) AS m, COUNT(*) AS n FROM notice_delivery_history FORCE INDEX (idx_ndh_at)
      WHERE at_ms >= ? AND event IN ('failed', 'poison') GROUP BY channel, m`,
    [sinceMs],
  );
  const [unclaimed] = await pool.query<RowDataPacket[]>(
    `SELECT channel, FLOOR(updated_at_ms / 60000) AS m, COUNT(*) AS n FROM notice_delivery_events FORCE INDEX (idx_nde_status_updated)
      WHERE status = 'failed' AND updated_at_ms >= ? AND claim_count = 0 GROUP BY channel, m`,
    [sinceMs],
  );
  const counts = new Map<string, { channel: string; minuteMs: number; count: number }>();
  for (const r of [...history, ...unclaimed]) {
    const key = `${r.channel}\u0000${r.m}`;
    const entry = counts.get(key) ?? { channel: String(r.channel), minuteMs: Number(r.m) * 60_000, count: 0 };
    entry.count += Number(r.n);
    counts.set(key, entry);
  }
  return [...counts.values()];
}
