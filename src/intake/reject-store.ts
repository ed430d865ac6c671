import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';

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
    await this.pool.query(
      `INSERT INTO notice_rejected_messages (source_name, message_id, topic, tag, message_keys, delivery_attempt, raw_body, reason, created_at_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON DUPLICATE KEY UPDATE delivery_attempt = VALUES(delivery_attempt), reason = VALUES(reason)`,
      [
        message.sourceName, message.messageId.slice(0, 128), message.topic.slice(0, 255), message.tag.slice(0, 255),
        message.keys.join(' ').slice(0, 512), message.deliveryAttempt, message.rawBody, message.reason.slice(0, 1024), nowMs,
      ],
    );
  }

  /** Newest first (idx_nrm_created), without bodies; `reason` matches a substring, `sinceMs` bounds created_at_ms. */
  async list(filter: { reason?: string; sinceMs?: number; limit: number; offset: number }): Promise<{ rows: RejectSummary[]; total: number }> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (filter.reason) {
      where.push("reason LIKE CONCAT('%', ?, '%')");
      params.push(filter.reason.replace(/[\\%_]/g, (c) => `\\${c}`));
    }
    if (filter.sinceMs !== undefined) {
      where.push('created_at_ms >= ?');
      params.push(filter.sinceMs);
    }
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT id, source_name, message_id, topic, tag, message_keys, delivery_attempt, reason, created_at_ms, LENGTH(raw_body) AS body_bytes
         FROM notice_rejected_messages ${clause} ORDER BY created_at_ms DESC, id DESC LIMIT ? OFFSET ?`,
      [...params, filter.limit, filter.offset],
    );
    const [count] = await this.pool.query<RowDataPacket[]>(`SELECT COUNT(*) AS n FROM notice_rejected_messages ${clause}`, params);
    return { rows: rows.map(toSummary), total: Number(count[0]?.n ?? 0) };
  }

  async get(id: number): Promise<(RejectSummary & { rawBody: Buffer }) | null> {
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT *, LENGTH(raw_body) AS body_bytes FROM notice_rejected_messages WHERE id = ?', [id]);
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
  bodyBytes: number;
}

function toSummary(r: RowDataPacket): RejectSummary {
  return {
    id: Number(r.id), sourceName: String(r.source_name), messageId: String(r.message_id), topic: String(r.topic), tag: String(r.tag ?? ''),
    keys: String(r.message_keys ?? ''), deliveryAttempt: Number(r.delivery_attempt), reason: String(r.reason), createdAtMs: Number(r.created_at_ms),
    bodyBytes: Number(r.body_bytes ?? 0),
  };
}

/** A raw MQ body for people: the text when it is UTF-8 (shown as text, never as markup), and a hex dump of its start. */
export function presentBody(body: Buffer, maxBytes = 4096): { utf8: boolean; text: string | null; hex: string; bytes: number; truncated: boolean } {
  const head = body.subarray(0, maxBytes);
  const text = body.toString('utf8');
  const utf8 = Buffer.compare(Buffer.from(text, 'utf8'), body) === 0;
  return { utf8, text: utf8 ? text.slice(0, 65_536) : null, hex: head.toString('hex').replace(/(..)/g, '$1 ').trim(), bytes: body.length, truncated: body.length > maxBytes };
}
