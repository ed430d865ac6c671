import type { MappedEvent } from '../types.ts';
import { describeZodError, parsePayloadJson } from '../payload-json.ts';
import { toNotice } from '../notice-event.ts';
import { roomRocketRewardGrantedPayload, roomUserKickedPayload, type RoomFact } from './payloads.ts';

export const ROOM_NOTICE = 'room_notice';
export const ROOM_SOURCE_NAME = 'room_outbox';
/** Only the kicked user's private notice is notice-service's; group messages stay with room-service. */
export const ROOM_USER_KICKED = 'RoomUserKicked';
/** A rocket's reward to one user (seed item 4): a private notice to that user; the reward itself is wallet's. */
export const ROOM_ROCKET_REWARD_GRANTED = 'RoomRocketRewardGranted';
/** The room event types that become private notices; every other room event is skipped. */
export const ROOM_NOTICE_EVENTS: ReadonlySet<string> = new Set([ROOM_USER_KICKED, ROOM_ROCKET_REWARD_GRANTED]);

/**
 * A room fact → the private C2C `room_notice` for its one recipient (the kicked user, the rewarded user). The event
 * id is the one the room group message carries, so a client that sees both dedups on it. Same mapping for the
 * outbox row and the MQ message.
 */
export function mapRoomFact(fact: RoomFact, recordedAtMs: number, languageField = 'language'): MappedEvent {
  if (!ROOM_NOTICE_EVENTS.has(fact.event_type)) return { kind: 'skip', eventType: fact.event_type };
  let raw = fact.payload;
  if (typeof raw === 'string') {
    try {
      raw = parsePayloadJson(raw);
    } catch (err) {
      return {
        kind: 'malformed',
        eventType: fact.event_type,
        userId: '',
        noticeKind: ROOM_NOTICE,
        reason: `payload is not valid JSON: ${(err as Error).message.slice(0, 200)}`,
      };
    }
  }
  const malformed = (field: string, reason: string): MappedEvent => {
    const guessed = (raw as Record<string, unknown> | null)?.[field];
    return {
      kind: 'malformed',
      eventType: fact.event_type,
      userId: typeof guessed === 'string' ? guessed : '',
      noticeKind: ROOM_NOTICE,
      reason: `${fact.event_type} payload: ${reason}`,
    };
  };
  if (fact.event_type === ROOM_ROCKET_REWARD_GRANTED) {
    const parsed = roomRocketRewardGrantedPayload.safeParse(raw);
    if (!parsed.success) return malformed('reward_user_id', describeZodError(parsed.error));
    const p = parsed.data;
    // Literals with their fields written out, optional ones added in order: a literal begun with a spread takes
    // V8's slow path (see the wallet mapping).
    const payload: Record<string, unknown> = {
      event_type: fact.event_type,
      event_id: fact.event_id,
      app_code: fact.app_code,
      room_id: fact.room_id,
      reward_user_id: p.reward_user_id,
      rocket_level: p.rocket_level,
      reward_items: p.reward_items,
    };
    if (p.rocket_id !== undefined) payload.rocket_id = p.rocket_id;
    payload.created_at_ms = fact.created_at_ms ?? recordedAtMs;
    payload.source_created_at_ms = fact.created_at_ms ?? null;
    return toNotice(payload, { eventType: fact.event_type, userId: p.reward_user_id, noticeKind: ROOM_NOTICE }, undefined, {
      owner: raw,
      field: languageField,
    });
  }
  const parsed = roomUserKickedPayload.safeParse(raw);
  if (!parsed.success) return malformed('target_user_id', describeZodError(parsed.error));
  const p = parsed.data;
  const payload: Record<string, unknown> = {
    event_type: fact.event_type,
    event_id: fact.event_id,
    app_code: fact.app_code,
    room_id: fact.room_id,
    target_user_id: p.target_user_id,
    operator_user_id: p.operator_user_id,
    reason: p.reason,
  };
  if (p.ban_until_ms !== undefined && p.ban_until_ms !== null) payload.ban_until_ms = p.ban_until_ms;
  payload.created_at_ms = fact.created_at_ms ?? recordedAtMs;
  payload.source_created_at_ms = fact.created_at_ms ?? null;
  return toNotice(payload, { eventType: fact.event_type, userId: p.target_user_id, noticeKind: ROOM_NOTICE }, undefined, { owner: raw, field: languageField });
}
