import type { MappedEvent, OutboxRow, SourceIdentity } from '../notices/types.ts';

/**
 * An owner outbox table the poller can read. The cursor machinery knows nothing of domains: a notice module
 * supplies the table, the columns it needs, and the pure mapping of a row.
 */
export interface OutboxSource {
  /** `source_name` in the ledger and the cursor key, e.g. `wallet_outbox`. */
  readonly sourceName: string;
  readonly database: string;
  readonly table: string;
  /** Columns to select besides `id`. */
  readonly columns: readonly string[];
  identify(row: OutboxRow): SourceIdentity;
  map(row: OutboxRow, recordedAtMs: number): MappedEvent;
}

/** Fallback identity for rows whose event_id or app_code is missing, so even they get a ledger row. */
export function identifyOutboxRow(sourceTable: string, row: OutboxRow): SourceIdentity {
  const eventId = typeof row.event_id === 'string' && row.event_id !== '' ? row.event_id : `${sourceTable}-row-${row.id}`;
  const createdAt = row.created_at_ms === null || row.created_at_ms === undefined ? null : Number(row.created_at_ms);
  return {
    appCode: typeof row.app_code === 'string' ? row.app_code : '',
    sourceEventId: eventId.slice(0, 191),
    sourceCreatedAtMs: createdAt !== null && Number.isFinite(createdAt) ? createdAt : null,
  };
}
