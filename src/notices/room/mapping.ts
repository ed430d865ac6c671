import type { MappedEvent } from '../types.ts';
import { describeZodError, parsePayloadJson } from '../payload-json.ts';
import { toNotice } from '../notice-event.ts';
import { roomUserKickedPayload, type RoomFact } from './payloads.ts';

export const ROOM_NOTICE = 'room_notice';
export const ROOM_SOURCE_NAME = 'room_outbox';
/** Only the kicked user's private notice is notice-service's; group messages stay with room-service. */
export const ROOM_USER_KICKED = 'RoomUserKicked';

/**
 * A RoomUserKicked fact → the private C2C `room_notice` for target_user_id. The event id is the one the room group
 * message carries, so a client that sees both dedups on it. Same mapping for the outbox row and the MQ message.
 */
export function mapRoomFact(fact: RoomFact, recordedAtMs: number): MappedEvent {
  if (fact.event_type !== ROOM_USER_KICKED) return { kind: 'skip', eventType: fact.event_type };
  let raw = fact.payload;
  if (typeof raw === 'string') {
    try {
      raw = parsePayloadJson(raw);
    } catch (err) {
      return { kind: 'malformed', eventType: fact.event_type, userId: '', noticeKind: ROOM_NOTICE, reason: `payload is not valid JSON: ${(err as Error).message.slice(0, 200)}` };
    }
  }
  const parsed = roomUserKickedPayload.safeParse(raw);
  if (!parsed.success) {
    const guessedUser = typeof (raw as { target_user_id?: unknown })?.target_user_id === 'string' ? (raw as { target_user_id: string }).target_user_id : '';
    return { kind: 'malformed', eventType: fact.event_type, userId: guessedUser, noticeKind: ROOM_NOTICE, reason: `RoomUserKicked payload: ${describeZodError(parsed.error)}` };
  }
  const p = parsed.data;
  const payload: Record<string, unknown> = {
    event_type: fact.event_type,
    event_id: fact.event_id,
    app_code: fact.app_code,
    room_id: fact.room_id,
    target_user_id: p.target_user_id,
    operator_user_id: p.operator_user_id,
    reason: p.reason,
    ...(p.ban_until_ms !== undefined && p.ban_until_ms !== null ? { ban_until_ms: p.ban_until_ms } : {}),
    created_at_ms: recordedAtMs,
    source_created_at_ms: fact.created_at_ms ?? null,
  };
  return toNotice(payload, { eventType: fact.event_type, userId: p.target_user_id, noticeKind: ROOM_NOTICE });
}
