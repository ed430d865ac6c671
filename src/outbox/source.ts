import { createHash } from 'node:crypto';
import type { OutboxRow, SourceIdentity } from '../facts/types.ts';
import { keyProblem, timestampProblem } from '../intake/fact-validation.ts';

export type { OutboxSource } from '../facts/types.ts';

/**
 * The ledger identity of an outbox row. A row whose event_id or app_code is missing or does not fit gets a stable
 * substitute key (`<table>-row-<id>`) and a `problem`, so it still gets its own failed ledger row; nothing is cut.
 */
export function identifyOutboxRow(sourceTable: string, row: OutboxRow): SourceIdentity {
  const appCode = typeof row.app_code === 'string' ? row.app_code : '';
  const eventId = typeof row.event_id === 'string' ? row.event_id : '';
  const keyIssue = keyProblem(appCode, eventId);
  // A missing event_id is the mapping's to report (every notice module says so); only other problems are added here.
  const problem = [eventId === '' ? null : keyIssue, timestampProblem('created_at_ms', row.created_at_ms)].filter((p) => p !== null).join('; ');
  return {
    appCode: keyIssue ? '' : appCode,
    sourceEventId: keyIssue ? `${sourceTable}-row-${row.id}` : eventId,
    sourceCreatedAtMs: typeof row.created_at_ms === 'number' && Number.isSafeInteger(row.created_at_ms) ? row.created_at_ms : null,
    ...(problem ? { problem } : {}),
  };
}

/** A row's identity as the owner wrote it (app code and event id, hashed to a fixed size), whatever its id. */
export function rowIdentity(row: OutboxRow): string {
  return createHash('sha256')
    .update(`${String(row.app_code ?? '')}\u0000${String(row.event_id ?? '')}`)
    .digest('base64url');
}
