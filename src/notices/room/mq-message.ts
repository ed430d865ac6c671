import { revocationOf } from '../revocation-fact.ts';
import type { SourceFact } from '../../facts/types.ts';
import { LIMITS } from '../../intake/fact-validation.ts';
import { describeZodError, parsePayloadJson } from '../payload-json.ts';
import { mapRoomFact, ROOM_SOURCE_NAME } from './mapping.ts';
import { roomFactEnvelope } from './payloads.ts';

export type ParsedRoomMessage = { kind: 'fact'; fact: SourceFact } | { kind: 'poison'; reason: string };

/**
 * A `hyapp_room_outbox` message body (JSON `{event_id, event_type, app_code, room_id, payload, created_at_ms}`) →
 * the same ledger fact the room_outbox poller produces, so both entries meet on one ledger key.
 */
export function parseRoomMqMessage(body: Buffer, recordedAtMs: number, languageField = 'language'): ParsedRoomMessage {
  // Checked before any parse: a huge body would block the event loop for a message that can never be sent.
  if (body.length > LIMITS.rawPayloadBytes)
    return {
      kind: 'poison',
      reason: `body is ${body.length} bytes; more than ${LIMITS.rawPayloadBytes} (intake reads no more; no channel takes a notice that large)`,
    };
  const text = body.toString('utf8');
  if (Buffer.compare(Buffer.from(text, 'utf8'), body) !== 0) return { kind: 'poison', reason: 'body is not valid UTF-8' };
  let raw: unknown;
  try {
    raw = parsePayloadJson(text);
  } catch (err) {
    return { kind: 'poison', reason: `body is not JSON: ${(err as Error).message.slice(0, 200)}` };
  }
  const envelope = roomFactEnvelope.safeParse(raw);
  if (!envelope.success) return { kind: 'poison', reason: `body: ${describeZodError(envelope.error)}` };
  const fact = envelope.data;
  const createdAt =
    fact.created_at_ms === null || fact.created_at_ms === undefined
      ? null
      : Number(typeof fact.created_at_ms === 'number' ? fact.created_at_ms : fact.created_at_ms.value);
  return {
    kind: 'fact',
    fact: {
      key: { sourceName: ROOM_SOURCE_NAME, appCode: fact.app_code, sourceEventId: fact.event_id },
      mapped: revocationOf(fact.event_type, fact.payload) ?? mapRoomFact(fact, recordedAtMs, languageField),
      sourceRowId: null,
      sourceCreatedAtMs: createdAt !== null && Number.isSafeInteger(createdAt) ? createdAt : null,
    },
  };
}
