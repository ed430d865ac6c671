import { identifyOutboxRow, type OutboxSource } from '../../outbox/source.ts';
import { ACTIVITY_SOURCE_NAME, mapActivityOutboxRow } from './mapping.ts';

/** `{activity_database}.activity_outbox`, owned by activity-service; read-only here. */
export function activityOutboxSource(activityDatabase: string, languageField = 'language'): OutboxSource {
  return {
    sourceName: ACTIVITY_SOURCE_NAME,
    database: activityDatabase,
    table: 'activity_outbox',
    columns: ['app_code', 'event_id', 'event_type', 'user_id', 'payload', 'created_at_ms'],
    identify: (row) => identifyOutboxRow('activity_outbox', row),
    map: (row, recordedAtMs) => mapActivityOutboxRow(row, recordedAtMs, languageField),
  };
}
