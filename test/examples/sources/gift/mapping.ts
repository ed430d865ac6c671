import { z } from 'zod';
import type { MappedEvent, OutboxRow } from '../../../../src/notices/types.ts';
import { describeZodError, int64, parsePayloadJson, rawPayloadText } from '../../../../src/notices/payload-json.ts';
import { LIMITS } from '../../../../src/intake/fact-validation.ts';
import { toNotice } from '../../../../src/notices/notice-event.ts';

export const GIFT_SOURCE_NAME = 'gift_outbox';
export const GIFT_NOTICE = 'gift_notice';

const giftReceived = z.object({ gift_id: z.string().min(1), sender_user_id: z.string().min(1), count: int64 });

/** gift_outbox row → a notice to the receiver of a gift; other event types are not notices. */
export function mapGiftOutboxRow(row: OutboxRow, recordedAtMs: number): MappedEvent {
  const eventType = typeof row.event_type === 'string' ? row.event_type : '';
  if (eventType !== 'GiftReceived') return { kind: 'skip', eventType };
  const userId = typeof row.user_id === 'string' ? row.user_id.trim() : '';
  const malformed = (reason: string): MappedEvent => ({ kind: 'malformed', eventType, userId, noticeKind: GIFT_NOTICE, reason });
  if (userId === '') return malformed('user_id is missing');
  const text = rawPayloadText(row, LIMITS.rawPayloadBytes);
  if ('problem' in text) return malformed(text.problem);
  let raw: unknown;
  try {
    raw = parsePayloadJson(text.text);
  } catch (err) {
    return malformed(`payload is not valid JSON: ${(err as Error).message.slice(0, 200)}`);
  }
  const payload = giftReceived.safeParse(raw);
  if (!payload.success) return malformed(`GiftReceived payload: ${describeZodError(payload.error)}`);
  const fields = {
    event_type: eventType,
    event_id: String(row.event_id),
    app_code: String(row.app_code),
    user_id: userId,
    recorded_at_ms: recordedAtMs,
    ...payload.data,
  };
  return toNotice(fields, { eventType, userId, noticeKind: GIFT_NOTICE });
}
