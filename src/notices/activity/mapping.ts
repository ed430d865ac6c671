import type { MappedEvent, OutboxRow } from '../types.ts';
import { describeZodError } from '../payload-json.ts';
import { readOutboxEnvelope } from '../envelope.ts';
import { toNotice } from '../notice-event.ts';
import { activityRewardGrantedPayload, systemNoticePayload, taskCompletedPayload } from './payloads.ts';

export const ACTIVITY_NOTICE = 'activity_notice';
export const ACTIVITY_SOURCE_NAME = 'activity_outbox';

/** The payload fields each event type passes to the client, in order, after the common ones. */
const SCHEMAS = {
  ActivityRewardGranted: activityRewardGrantedPayload,
  TaskCompleted: taskCompletedPayload,
  SystemNotice: systemNoticePayload,
} as const;
type ActivityEventType = keyof typeof SCHEMAS;
const CONTRACT_KEYS = Object.fromEntries(Object.entries(SCHEMAS).map(([type, schema]) => [type, Object.keys(schema.shape)])) as Record<
  ActivityEventType,
  string[]
>;

export const ACTIVITY_EVENT_TYPES = Object.keys(SCHEMAS) as ActivityEventType[];

/**
 * activity_outbox row (activity-service: rewards, tasks, system messages) → the private `activity_notice` C2C
 * payload for `user_id`. Unknown event types are skipped and counted; a row that does not fit its type fails with
 * the reason, like wallet's.
 */
export function mapActivityOutboxRow(row: OutboxRow, recordedAtMs: number, languageField = 'language'): MappedEvent {
  const envelope = readOutboxEnvelope(row, (eventType) => (eventType in SCHEMAS ? ACTIVITY_NOTICE : undefined));
  if ('skipOrMalformed' in envelope) return envelope.skipOrMalformed;
  const { eventType, userId, payload: raw, sourceCreatedAtMs, malformed } = envelope;
  const parsed = SCHEMAS[eventType as ActivityEventType].safeParse(raw);
  if (!parsed.success) return malformed(`${eventType} payload: ${describeZodError(parsed.error)}`);
  // Only the fields of the type's contract reach the client (looseObject keeps unknown ones in `parsed.data`), in
  // the contract's order between the common fields and the stamps; assigned one by one, not spread (V8's slow path).
  const payload: Record<string, unknown> = { event_type: eventType, event_id: row.event_id, app_code: row.app_code, user_id: userId };
  const data = parsed.data as Record<string, unknown>;
  for (const key of CONTRACT_KEYS[eventType as ActivityEventType]) if (key in data) payload[key] = data[key];
  payload.created_at_ms = sourceCreatedAtMs ?? recordedAtMs;
  payload.source_created_at_ms = sourceCreatedAtMs;
  return toNotice(payload, { eventType, userId, noticeKind: ACTIVITY_NOTICE }, undefined, { owner: raw, field: languageField });
}
