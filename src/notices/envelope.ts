import type { MappedEvent, OutboxRow } from '../facts/types.ts';
import { LIMITS } from '../intake/fact-validation.ts';
import { parsePayloadJson, rawPayloadText } from './payload-json.ts';

/** What every outbox row of a notice carries, read the same way for every source. */
export interface OutboxEnvelope {
  eventType: string;
  noticeKind: string;
  /** Trimmed; never empty. */
  userId: string;
  eventId: string;
  appCode: string;
  /** The payload column as parsed JSON (a string column parsed, a JSON column as the driver gave it). */
  payload: unknown;
  /** The row's created_at_ms when it is a safe integer, else null. */
  sourceCreatedAtMs: number | null;
  /** A malformed outcome for this fact, with the reason. */
  malformed(reason: string): MappedEvent;
}

/**
 * The checks every outbox mapping made first, written once: a type the source makes no notice of is skipped; a notice
 * without its recipient, event id or app code, or with a payload over the size limit or not JSON, is malformed with
 * the reason. What is left for a mapping is its own payload schema and fields.
 */
export function readOutboxEnvelope(row: OutboxRow, noticeKindOf: (eventType: string) => string | undefined): OutboxEnvelope | { skipOrMalformed: MappedEvent } {
  const eventType = typeof row.event_type === 'string' ? row.event_type : '';
  const noticeKind = noticeKindOf(eventType);
  if (!noticeKind) return { skipOrMalformed: { kind: 'skip', eventType } };
  const userId = typeof row.user_id === 'string' ? row.user_id.trim() : '';
  const malformed = (reason: string): MappedEvent => ({ kind: 'malformed', eventType, userId, noticeKind, reason });
  const refuse = (reason: string) => ({ skipOrMalformed: malformed(reason) });
  if (userId === '') return refuse('user_id is missing');
  if (typeof row.event_id !== 'string' || row.event_id === '') return refuse('event_id is missing');
  if (typeof row.app_code !== 'string' || row.app_code === '') return refuse('app_code is missing');
  const text = rawPayloadText(row, LIMITS.rawPayloadBytes);
  if ('problem' in text) return refuse(text.problem);
  let payload: unknown;
  try {
    payload = parsePayloadJson(text.text);
  } catch (err) {
    return refuse(`payload is not valid JSON: ${(err as Error).message.slice(0, 200)}`);
  }
  const sourceCreatedAtMs = typeof row.created_at_ms === 'number' && Number.isSafeInteger(row.created_at_ms) ? row.created_at_ms : null;
  return { eventType, noticeKind, userId, eventId: row.event_id, appCode: row.app_code, payload, sourceCreatedAtMs, malformed };
}
