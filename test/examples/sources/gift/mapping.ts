import { z } from 'zod';
import type { MappedEvent, OutboxRow } from '../../../../src/notices/types.ts';
import { describeZodError, int64 } from '../../../../src/notices/payload-json.ts';
import { readOutboxEnvelope } from '../../../../src/notices/envelope.ts';
import { toNotice } from '../../../../src/notices/notice-event.ts';

export const GIFT_SOURCE_NAME = 'gift_outbox';
export const GIFT_NOTICE = 'gift_notice';

const giftReceived = z.object({ gift_id: z.string().min(1), sender_user_id: z.string().min(1), count: int64 });

/** gift_outbox row → a notice to the receiver of a gift; other event types are not notices. */
export function mapGiftOutboxRow(row: OutboxRow, recordedAtMs: number): MappedEvent {
  const envelope = readOutboxEnvelope(row, (eventType) => (eventType === 'GiftReceived' ? GIFT_NOTICE : undefined));
  if ('skipOrMalformed' in envelope) return envelope.skipOrMalformed;
  const { eventType, userId, payload: raw, malformed } = envelope;
  const payload = giftReceived.safeParse(raw);
  if (!payload.success) return malformed(`GiftReceived payload: ${describeZodError(payload.error)}`);
  const fields = {
    event_type: eventType,
    event_id: envelope.eventId,
    app_code: envelope.appCode,
    user_id: userId,
    recorded_at_ms: recordedAtMs,
    ...payload.data,
  };
  return toNotice(fields, { eventType, userId, noticeKind: GIFT_NOTICE });
}
