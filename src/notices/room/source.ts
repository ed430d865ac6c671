import { identifyOutboxRow, type OutboxSource } from '../../outbox/source.ts';
import type { MappedEvent, OutboxRow } from '../types.ts';
import { describeZodError, rawPayloadText } from '../payload-json.ts';
import { LIMITS } from '../../intake/fact-validation.ts';
import { mapRoomFact, ROOM_NOTICE, ROOM_NOTICE_EVENTS, ROOM_SOURCE_NAME } from './mapping.ts';
import { roomFactEnvelope } from './payloads.ts';

/** `{room_database}.room_outbox`, owned by room-service; read-only here (its `status` column included). */
export function roomOutboxSource(roomDatabase: string, languageField = 'language'): OutboxSource {
  return {
    sourceName: ROOM_SOURCE_NAME,
    database: roomDatabase,
    table: 'room_outbox',
    columns: ['app_code', 'event_id', 'event_type', 'room_id', 'payload', 'created_at_ms'],
    identify: (row) => identifyOutboxRow('room_outbox', row),
    map: (row, recordedAtMs) => mapRoomOutboxRow(row, recordedAtMs, languageField),
  };
}

function mapRoomOutboxRow(row: OutboxRow, recordedAtMs: number, languageField: string): MappedEvent {
  const eventType = typeof row.event_type === 'string' ? row.event_type : '';
  if (!ROOM_NOTICE_EVENTS.has(eventType)) return { kind: 'skip', eventType };
  const text = rawPayloadText(row, LIMITS.rawPayloadBytes);
  if ('problem' in text) return { kind: 'malformed', eventType, userId: '', noticeKind: ROOM_NOTICE, reason: text.problem };
  // Columns come as plain values; only the room events that become notices need to be well-formed.
  const envelope = roomFactEnvelope.safeParse({
    event_id: row.event_id,
    event_type: eventType,
    app_code: row.app_code,
    room_id: row.room_id ?? '',
    payload: text.text,
    created_at_ms: row.created_at_ms === null || row.created_at_ms === undefined ? null : Number(row.created_at_ms),
  });
  if (!envelope.success) {
    return { kind: 'malformed', eventType, userId: '', noticeKind: ROOM_NOTICE, reason: `room_outbox row: ${describeZodError(envelope.error)}` };
  }
  return mapRoomFact(envelope.data, recordedAtMs, languageField);
}
