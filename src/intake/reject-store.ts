import { createHash } from 'node:crypto';
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';

/** The most of a body kept: anything longer can never be parsed (LIMITS.rawPayloadBytes), so never requeued. */
export const KEPT_BODY_BYTES = 64 * 1024;
/** A reason search looks through at most this many newest messages, so it is one bounded index range. */
export const REASON_SEARCH_WINDOW = 10_000;

export interface RejectedMessage {
  sourceName: string;
  messageId: string;
  topic: string;
  tag: string;
  keys: string[];
  deliveryAttempt: number;
  rawBody: Buffer;
  reason: string;
}

/** `notice_rejected_messages`: where an MQ message that is acked without a ledger row is kept for operators. */
export class RejectStore {
  constructor(private readonly pool: Pool) {}

  /** One row per message id; a redelivered reject updates it instead of piling up. */
  async record(message: RejectedMessage, nowMs: number): Promise<void> {
    const body = message.rawBody;
    await this.pool.query(
      `INSERT INTO notice_rejected_messages (source_name, message_id, topic, tag, message_keys, delivery_attempt, raw_body, body_bytes, body_sha256,
        reason, created_at_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON DUPLICATE KEY UPDATE delivery_attempt = VALUES(delivery_attempt), reason = VALUES(reason)`,
      [
        message.sourceName,
        message.messageId.slice(0, 128),
        message.topic.slice(0, 255),
        message.tag.slice(0, 255),
        message.keys.join(' ').slice(0, 512),
        message.deliveryAttempt,
        body.subarray(0, KEPT_BODY_BYTES),
        body.length,
        createHash('sha256').update(body).digest(),
        message.reason.slice(0, 1024),
        nowMs,
      ],
    );
  }

  /** Messages received before `olderThanMs`, oldest first, at most `limit` (idx_nrm_created). */
  async purge(olderThanMs: number, limit: number): Promise<number> {
    const [result] = await this.pool.query<ResultSetHeader>('DELETE FROM notice_rejected_messages WHERE created_at_ms < ? ORDER BY created_at_ms LIMIT ?', [
      olderThanMs,
      limit,
    ]);
    return result.affectedRows;
  }

  /**
   * Newest first (idx_nrm_created), without bodies; `sinceMs` bounds created_at_ms. `reason` matches a substring
   * among the newest REASON_SEARCH_WINDOW messages only (a LIKE '%…%' cannot use an index, so it is bounded).
   */
  async list(filter: {
    reason?: string;
    sinceMs?: number;
    limit: number;
    offset: number;
  }): Promise<{ rows: RejectSummary[]; total: number; reason_search_window?: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.sinceMs !== undefined) {
      where.push('created_at_ms >= ?');
      params.push(filter.sinceMs);
    }
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    let from = 'notice_rejected_messages';
    let fromParams: unknown[] = [];
    let reasonClause = '';
    if (filter.reason) {
      from = `(SELECT * FROM notice_rejected_messages FORCE INDEX (idx_nrm_created) ${clause} ORDER BY created_at_ms DESC LIMIT
        ${REASON_SEARCH_WINDOW}) AS newest`;
      fromParams = params.splice(0);
      reasonClause = "WHERE reason LIKE CONCAT('%', ?, '%')";
      params.push(filter.reason.slice(0, 200).replace(/[\\%_]/g, (c) => `\\${c}`));
    }
    const outer = filter.reason ? reasonClause : clause;
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT id, source_name, message_id, topic, tag, message_keys, delivery_attempt, reason, created_at_ms, body_bytes, body_sha256,
        LENGTH(raw_body) AS kept_bytes
         FROM ${from} ${outer} ORDER BY created_at_ms DESC, id DESC LIMIT ? OFFSET ?`,
      [...fromParams, ...params, filter.limit, filter.offset],
    );
    const [count] = await this.pool.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM ${from} ${outer}`, [...fromParams, ...params]);
    return { rows: rows.map(toSummary), total: Number(count[0]?.n ?? 0), ...(filter.reason ? { reason_search_window: REASON_SEARCH_WINDOW } : {}) };
  }

  async get(id: number): Promise<(RejectSummary & { rawBody: Buffer }) | null> {
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT *, LENGTH(raw_body) AS kept_bytes FROM notice_rejected_messages WHERE id = ?', [id]);
    const row = rows[0];
    return row ? { ...toSummary(row), rawBody: Buffer.from(row.raw_body ?? Buffer.alloc(0)) } : null;
  }

  async updateReason(id: number, reason: string): Promise<void> {
    await this.pool.query('UPDATE notice_rejected_messages SET reason = ? WHERE id = ?', [reason.slice(0, 1024), id]);
  }

  async remove(id: number): Promise<boolean> {
    const [result] = await this.pool.query<ResultSetHeader>('DELETE FROM notice_rejected_messages WHERE id = ?', [id]);
    return result.affectedRows === 1;
  }
}

export interface RejectSummary {
  id: number;
  sourceName: string;
  messageId: string;
  topic: string;
  tag: string;
  keys: string;
  deliveryAttempt: number;
  reason: string;
  createdAtMs: number;
  /** The body's whole length; `keptBytes` of it are stored (less when it was longer than KEPT_BODY_BYTES). */
  bodyBytes: number;
  keptBytes: number;
  bodySha256: string | null;
}

function toSummary(r: RowDataPacket): RejectSummary {
  return {
    id: Number(r.id),
    sourceName: String(r.source_name),
    messageId: String(r.message_id),
    topic: String(r.topic),
    tag: String(r.tag ?? ''),
    keys: String(r.message_keys ?? ''),
    deliveryAttempt: Number(r.delivery_attempt),
    reason: String(r.reason),
    createdAtMs: Number(r.created_at_ms),
    bodyBytes: Math.max(Number(r.body_bytes ?? 0), Number(r.kept_bytes ?? 0)),
    keptBytes: Number(r.kept_bytes ?? 0),
    bodySha256: r.body_sha256 ? Buffer.from(r.body_sha256).toString('hex') : null,
  };
}

/** A raw MQ body for people: the text when it is UTF-8 (shown as text, never as markup), and a hex dump of its start. */
export function presentBody(body: Buffer, maxBytes = 4096): { utf8: boolean; text: string | null; hex: string; bytes: number; truncated: boolean } {
  const head = body.subarray(0, maxBytes);
  const text = body.toString('utf8');
  const utf8 = Buffer.compare(Buffer.from(text, 'utf8'), body) === 0;
  return {
    utf8,
    text: utf8 ? text.slice(0, 65_536) : null,
    hex: head.toString('hex').replace(/(..)/g, '$1 ').trim(),
    bytes: body.length,
    truncated: body.length > maxBytes,
  };
}
