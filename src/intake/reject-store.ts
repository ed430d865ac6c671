import type { Pool } from 'mysql2/promise';

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
}
