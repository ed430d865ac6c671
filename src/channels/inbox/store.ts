import { createHash } from 'node:crypto';
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import type { LedgerKey } from '../../ledger/types.ts';
import { retryOnDeadlock } from '../../platform/deadlock-retry.ts';
import { valueBytesBound, writeInChunks } from '../../platform/statement-size.ts';

const TABLE = 'notice_inbox_items';

/** Whose inbox: always both, from the gateway's authenticated session; every statement is scoped by them. */
export interface InboxOwner {
  appCode: string;
  userId: string;
}

export interface NewInboxItem extends InboxOwner {
  fact: Omit<LedgerKey, 'channel'>;
  noticeKind: string;
  eventType: string;
  payload: string;
  createdAtMs: number;
  expireAtMs: number | null;
}

export interface InboxItem {
  id: string;
  noticeKind: string;
  eventType: string;
  payload: string;
  read: boolean;
  archived: boolean;
  createdAtMs: number;
  readAtMs: number | null;
  archivedAtMs: number | null;
}

export type ReadFilter = 'all' | 'unread' | 'read';
export type ArchiveFilter = 'exclude' | 'only' | 'include';

export interface ListFilter {
  read: ReadFilter;
  archived: ArchiveFilter;
  kinds: readonly string[];
}

export interface UnreadCount {
  count: number;
  capped: boolean;
  byKind: Record<string, number>;
  /** Items newer than the user's MarkSeen, counted up to the same cap (the bell badge). */
  unseen: number;
}

/** One fact is one inbox item, whichever delivery attempt writes it. */
export function factHash(fact: Omit<LedgerKey, 'channel'>): Buffer {
  return createHash('sha256').update(`${fact.sourceName}\u0000${fact.appCode}\u0000${fact.sourceEventId}`).digest();
}

const COLUMNS = 'id, notice_kind, event_type, payload, is_read, is_archived, created_at_ms, read_at_ms, archived_at_ms';

function toItem(r: RowDataPacket): InboxItem {
  return {
    id: String(r.id),
    noticeKind: r.notice_kind,
    eventType: r.event_type,
    payload: r.payload,
    read: r.is_read === 1,
    archived: r.is_archived === 1,
    createdAtMs: Number(r.created_at_ms),
    readAtMs: r.read_at_ms === null ? null : Number(r.read_at_ms),
    archivedAtMs: r.archived_at_ms === null ? null : Number(r.archived_at_ms),
  };
}

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/**
 * The only writer and reader of notice_inbox_items. Per-user statements use the (app_code, user_id, …) indexes and
 * touch at most one user's rows, which the per-user cap bounds; ids are decimal strings (BIGINT is unsafe in JS).
 */
export class InboxStore {
  /** `queryTimeoutMs`: a deadline on every statement (the API's); 0 waits as long as MySQL takes (the channel's). */
  constructor(
    private readonly pool: Pool,
    private readonly queryTimeoutMs = 0,
  ) {}

  private query<T extends RowDataPacket[] | ResultSetHeader>(sql: string, values: unknown[]): Promise<[T, unknown]> {
    return this.pool.query<T>(this.queryTimeoutMs > 0 ? { sql, values, timeout: this.queryTimeoutMs } : { sql, values }) as Promise<[T, unknown]>;
  }

  /**
   * Insert-if-absent for a batch (split when its bytes would pass the server's max_allowed_packet); returns each
   * fact's item id (hex fact hash → id), new or already there.
   */
  async insert(items: readonly NewInboxItem[]): Promise<Map<string, string>> {
    if (items.length === 0) return new Map();
    const hashes = items.map((i) => factHash(i.fact));
    const rows = items.map((item, n) => ({ item, hash: hashes[n]! }));
    await writeInChunks(
      this.pool,
      rows,
      ({ item }) =>
        valueBytesBound(item.payload) +
        valueBytesBound(item.userId) +
        valueBytesBound(item.fact.sourceEventId) +
        3 * (item.appCode.length + item.noticeKind.length + item.eventType.length + item.fact.sourceName.length) +
        300,
      (chunk) => {
        const values: unknown[] = [];
        for (const { item, hash } of chunk)
          values.push(
            hash,
            item.appCode,
            item.userId,
            item.fact.sourceName,
            item.fact.sourceEventId,
            item.noticeKind,
            item.eventType,
            item.payload,
            item.createdAtMs,
            item.expireAtMs,
          );
        return {
          sql: `INSERT INTO ${TABLE} (fact_hash, app_code, user_id, source_name, source_event_id, notice_kind, event_type, payload, created_at_ms,
            expire_at_ms) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')} ON DUPLICATE KEY UPDATE id = id`,
          params: values,
        };
      },
      async (sql, params) => {
        await retryOnDeadlock(() => this.query<ResultSetHeader>(sql, params));
      },
    );
    const [found] = await this.query<RowDataPacket[]>(`SELECT id, fact_hash FROM ${TABLE} WHERE fact_hash IN (${placeholders(hashes.length)})`, hashes);
    return new Map(found.map((r) => [(r.fact_hash as Buffer).toString('hex'), String(r.id)]));
  }

  /** Newest first, strictly below `beforeId` (the previous page's last id): keyset, never OFFSET. */
  async list(owner: InboxOwner, filter: ListFilter, beforeId: string | null, limit: number): Promise<InboxItem[]> {
    const where = ['app_code = ?', 'user_id = ?'];
    const params: unknown[] = [owner.appCode, owner.userId];
    if (filter.archived === 'exclude') where.push('is_archived = 0');
    if (filter.archived === 'only') where.push('is_archived = 1');
    if (filter.read === 'unread') where.push('is_read = 0');
    if (filter.read === 'read') where.push('is_read = 1');
    if (filter.kinds.length > 0) {
      where.push(`notice_kind IN (${placeholders(filter.kinds.length)})`);
      params.push(...filter.kinds);
    }
    if (beforeId !== null) {
      where.push('id < ?');
      params.push(beforeId);
    }
    // The index that matches the filter (PRIMARY is (app_code, user_id, id)); forced, as with one user holding most rows the optimizer once chose a worse one.
    const index =
      filter.kinds.length > 0 ? 'idx_nii_kind' : filter.read === 'unread' ? 'idx_nii_unread' : filter.archived === 'include' ? 'PRIMARY' : 'idx_nii_list';
    const [rows] = await this.query<RowDataPacket[]>(
      `SELECT ${COLUMNS} FROM ${TABLE} FORCE INDEX (${index}) WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT ?`,
      [...params, limit],
    );
    return rows.map(toItem);
  }

  /**
   * Unread items, counted up to `cap` (a badge shows "99+"): one bounded read of at most cap + 1 index entries.
   * `byKind` counts the same rows, so it is exact unless `capped`.
   */
  async unreadCount(owner: InboxOwner, kinds: readonly string[], cap: number): Promise<UnreadCount> {
    const kindFilter = kinds.length > 0 ? ` AND notice_kind IN (${placeholders(kinds.length)})` : '';
    const [rows] = await this.query<RowDataPacket[]>(
      `SELECT notice_kind, COUNT(*) AS n FROM (SELECT notice_kind FROM ${TABLE} FORCE INDEX (idx_nii_unread) WHERE app_code = ? AND user_id = ? AND
        is_read = 0${kindFilter} ORDER BY id DESC LIMIT ?) AS newest GROUP BY notice_kind`,
      [owner.appCode, owner.userId, ...kinds, cap + 1],
    );
    const byKind: Record<string, number> = {};
    let total = 0;
    for (const r of rows) {
      byKind[r.notice_kind] = Number(r.n);
      total += Number(r.n);
    }
    const [[seen]] = (await this.query<RowDataPacket[]>(
      `SELECT COUNT(*) AS n FROM (SELECT id FROM ${TABLE} WHERE app_code = ? AND user_id = ?
          AND id > COALESCE((SELECT seen_up_to_id FROM notice_inbox_seen WHERE app_code = ? AND user_id = ?), 0) ORDER BY id DESC LIMIT ?) AS fresh`,
      [owner.appCode, owner.userId, owner.appCode, owner.userId, cap],
    )) as [RowDataPacket[], unknown];
    return { count: Math.min(total, cap), capped: total > cap, byKind, unseen: Number(seen!.n) };
  }

  /** Everything up to `upToId` (null: up to the newest item) counts as seen; the mark only moves forward. */
  async markSeen(owner: InboxOwner, upToId: string | null, nowMs: number): Promise<void> {
    // Never beyond the caller's own newest item: a larger id would silence the badge for items not yet arrived.
    const newest = await this.newestId(owner);
    if (newest === null) return;
    const upTo = upToId === null || BigInt(upToId) > BigInt(newest) ? newest : upToId;
    await this.query<ResultSetHeader>(
      `INSERT INTO notice_inbox_seen (app_code, user_id, seen_up_to_id, updated_at_ms) VALUES (?, ?, ?, ?)
       ON DUPLICATE KEY UPDATE seen_up_to_id = GREATEST(seen_up_to_id, VALUES(seen_up_to_id)), updated_at_ms = VALUES(updated_at_ms)`,
      [owner.appCode, owner.userId, upTo, nowMs],
    );
  }

  /**
   * Up to when the user's IM conversation may be marked read (ms): the moment the oldest unread item's fact entered
   * the ledger — its C2C message went out after that. Reads that are not a prefix mark only the prefix, so the IM
   * badge never drops below the inbox's. Null: nothing is unread, so everything may be.
   */
  async readBoundaryMs(owner: InboxOwner): Promise<number | null> {
    const [unread] = await this.query<RowDataPacket[]>(
      `SELECT MIN(e.created_at_ms) AS at FROM ${TABLE} i JOIN notice_delivery_events e
         ON e.source_name = i.source_name AND e.app_code = i.app_code AND e.source_event_id = i.source_event_id AND e.channel = 'tencent_im_c2c'
       WHERE i.app_code = ? AND i.user_id = ? AND i.is_read = 0`,
      [owner.appCode, owner.userId],
    );
    return unread[0]?.at === null || unread[0]?.at === undefined ? null : Number(unread[0].at);
  }

  /** The user's newest item id (archived ones included), or null. */
  async newestId(owner: InboxOwner): Promise<string | null> {
    const [rows] = await this.query<RowDataPacket[]>(`SELECT MAX(id) AS id FROM ${TABLE} WHERE app_code = ? AND user_id = ?`, [owner.appCode, owner.userId]);
    return rows[0]?.id === null || rows[0]?.id === undefined ? null : String(rows[0].id);
  }

  /** Removes a fact's item (a revocation); whether there was one. */
  async deleteFact(fact: Omit<LedgerKey, 'channel'>): Promise<boolean> {
    const [result] = await this.query<ResultSetHeader>(`DELETE FROM ${TABLE} WHERE fact_hash = ?`, [factHash(fact)]);
    return result.affectedRows > 0;
  }

  /** One item of the owner's, or null. */
  async item(owner: InboxOwner, id: string): Promise<InboxItem | null> {
    const [rows] = await this.query<RowDataPacket[]>(`SELECT ${COLUMNS} FROM ${TABLE} WHERE app_code = ? AND user_id = ? AND id = ?`, [
      owner.appCode,
      owner.userId,
      id,
    ]);
    return rows[0] ? toItem(rows[0]) : null;
  }

  /** Of these ids, the ones that are this owner's items (someone else's look exactly like missing ones). */
  async ownedIds(owner: InboxOwner, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const [rows] = await this.query<RowDataPacket[]>(`SELECT id FROM ${TABLE} WHERE app_code = ? AND user_id = ? AND id IN (${placeholders(ids.length)})`, [
      owner.appCode,
      owner.userId,
      ...ids,
    ]);
    return new Set(rows.map((r) => String(r.id)));
  }

  markRead(owner: InboxOwner, ids: readonly string[], nowMs: number): Promise<number> {
    return this.update(owner, ids, 'is_read = 1, read_at_ms = ?', [nowMs], 'is_read = 0');
  }

  /** Unread again; also takes it out of the archive (an archived item is always read). */
  markUnread(owner: InboxOwner, ids: readonly string[]): Promise<number> {
    return this.update(owner, ids, 'is_read = 0, read_at_ms = NULL, is_archived = 0, archived_at_ms = NULL', [], 'is_read = 1');
  }

  /** Archived items are read: the invariant that keeps the unread index free of archived rows. */
  archive(owner: InboxOwner, ids: readonly string[], nowMs: number): Promise<number> {
    return this.update(owner, ids, 'is_archived = 1, archived_at_ms = ?, is_read = 1, read_at_ms = COALESCE(read_at_ms, ?)', [nowMs, nowMs], 'is_archived = 0');
  }

  unarchive(owner: InboxOwner, ids: readonly string[]): Promise<number> {
    return this.update(owner, ids, 'is_archived = 0, archived_at_ms = NULL', [], 'is_archived = 1');
  }

  async delete(owner: InboxOwner, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const [result] = await retryOnDeadlock(() =>
      this.query<ResultSetHeader>(`DELETE FROM ${TABLE} WHERE app_code = ? AND user_id = ? AND id IN (${placeholders(ids.length)})`, [
        owner.appCode,
        owner.userId,
        ...ids,
      ]),
    );
    return result.affectedRows;
  }

  /**
   * Every unread item up to `upToId` (what the client has seen, so an item arriving meanwhile stays unread), in
   * chunks so no statement locks more than `chunk` rows.
   */
  async markAllRead(owner: InboxOwner, upToId: string | null, kinds: readonly string[], nowMs: number, chunk = 1000): Promise<number> {
    const kindFilter = kinds.length > 0 ? ` AND notice_kind IN (${placeholders(kinds.length)})` : '';
    const bound = upToId === null ? '' : ' AND id <= ?';
    let total = 0;
    for (;;) {
      const [result] = await retryOnDeadlock(() =>
        this.query<ResultSetHeader>(
          `UPDATE ${TABLE} SET is_read = 1, read_at_ms = ? WHERE app_code = ? AND user_id = ? AND is_read = 0${bound}${kindFilter} ORDER BY id LIMIT ?`,
          [nowMs, owner.appCode, owner.userId, ...(upToId === null ? [] : [upToId]), ...kinds, chunk],
        ),
      );
      total += result.affectedRows;
      if (result.affectedRows < chunk) return total;
    }
  }

  /** Items past their retention, oldest expiry first, at most `limit`. */
  async deleteExpired(nowMs: number, limit: number): Promise<number> {
    const [result] = await retryOnDeadlock(() =>
      this.query<ResultSetHeader>(`DELETE FROM ${TABLE} WHERE expire_at_ms < ? ORDER BY expire_at_ms LIMIT ?`, [nowMs, limit]),
    );
    return result.affectedRows;
  }

  /** A user's items beyond their newest `keep`, at most `limit` per call (the oldest first). */
  async deleteBeyondCap(owner: InboxOwner, keep: number, limit: number): Promise<number> {
    const [nth] = await this.query<RowDataPacket[]>(
      `SELECT id FROM ${TABLE} FORCE INDEX (PRIMARY) WHERE app_code = ? AND user_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?`,
      [owner.appCode, owner.userId, keep],
    );
    if (nth.length === 0) return 0;
    const [result] = await retryOnDeadlock(() =>
      this.query<ResultSetHeader>(`DELETE FROM ${TABLE} WHERE app_code = ? AND user_id = ? AND id <= ? ORDER BY id LIMIT ?`, [
        owner.appCode,
        owner.userId,
        nth[0]!.id,
        limit,
      ]),
    );
    return result.affectedRows;
  }

  private async update(owner: InboxOwner, ids: readonly string[], assignments: string, params: unknown[], unlessAlready: string): Promise<number> {
    if (ids.length === 0) return 0;
    const [result] = await retryOnDeadlock(() =>
      this.query<ResultSetHeader>(
        `UPDATE ${TABLE} SET ${assignments} WHERE app_code = ? AND user_id = ? AND id IN (${placeholders(ids.length)}) AND ${unlessAlready}`,
        [...params, owner.appCode, owner.userId, ...ids],
      ),
    );
    return result.affectedRows;
  }
}
