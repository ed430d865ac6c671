import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import type { LedgerKey } from '../ledger/types.ts';
import { clipText } from '../platform/text.ts';

export type FactKey = Omit<LedgerKey, 'channel'>;

export interface Revocation extends FactKey {
  state: 'pending' | 'done';
  requestedBy: string;
  requestedAtMs: number;
  doneAtMs: number | null;
  outcome: string | null;
}

const toRevocation = (r: RowDataPacket): Revocation => ({
  sourceName: String(r.source_name),
  appCode: String(r.app_code),
  sourceEventId: String(r.source_event_id),
  state: r.state === 'done' ? 'done' : 'pending',
  requestedBy: String(r.requested_by),
  requestedAtMs: Number(r.requested_at_ms),
  doneAtMs: r.done_at_ms === null ? null : Number(r.done_at_ms),
  outcome: r.outcome === null ? null : String(r.outcome),
});

/** The revocation's fact has ledger rows (the ledger's primary key leads with the fact's three columns). */
const KNOWN =
  '(EXISTS (SELECT 1 FROM notice_delivery_events e WHERE e.source_name = r.source_name AND e.app_code = r.app_code AND e.source_event_id = r.source_event_id))';

/** notice_revocations: one row per fact someone asked to take back; asking again changes nothing. */
export class RevocationStore {
  constructor(private readonly pool: Pool) {}

  /** Records the request; false when the fact was already asked for (it is one revocation). */
  async request(fact: FactKey, requestedBy: string, nowMs: number): Promise<boolean> {
    const [result] = await this.pool.query<ResultSetHeader>(
      `INSERT IGNORE INTO notice_revocations (source_name, app_code, source_event_id, state, requested_by, requested_at_ms) VALUES (?, ?, ?, 'pending', ?, ?)`,
      [fact.sourceName, fact.appCode, fact.sourceEventId, clipText(requestedBy, 128), nowMs],
    );
    return result.affectedRows === 1;
  }

  async get(fact: FactKey): Promise<Revocation | null> {
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT * FROM notice_revocations WHERE source_name = ? AND app_code = ? AND source_event_id = ?', [
      fact.sourceName,
      fact.appCode,
      fact.sourceEventId,
    ]);
    return rows[0] ? toRevocation(rows[0]) : null;
  }

  async pending(limit: number): Promise<Revocation[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>("SELECT * FROM notice_revocations WHERE state = 'pending' ORDER BY requested_at_ms LIMIT ?", [limit]);
    return rows.map(toRevocation);
  }

  /** Pending revocations of facts the ledger knows, oldest first: ids that never arrived cannot hold them back. */
  async pendingKnown(limit: number): Promise<Revocation[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT r.* FROM notice_revocations r WHERE r.state = 'pending' AND ${KNOWN} ORDER BY r.requested_at_ms LIMIT ?`,
      [limit],
    );
    return rows.map(toRevocation);
  }

  /**
   * Finishes, in one statement, pending revocations asked before `askedBeforeMs` of facts the ledger does not know:
   * nothing to take back now, and ingest records the fact revoked if it ever arrives (it checks every revocation).
   */
  async finishUnknown(askedBeforeMs: number, outcome: string, nowMs: number, limit: number): Promise<number> {
    const [result] = await this.pool.query<ResultSetHeader>(
      `UPDATE notice_revocations r SET r.state = 'done', r.done_at_ms = ?, r.outcome = ?
        WHERE r.state = 'pending' AND r.requested_at_ms < ? AND NOT ${KNOWN} ORDER BY r.requested_at_ms LIMIT ?`,
      [nowMs, clipText(outcome, 1024), askedBeforeMs, limit],
    );
    return result.affectedRows;
  }

  /** Deletes finished revocations older than `beforeMs` whose fact the ledger does not hold (never arrived, or purged). */
  async purge(beforeMs: number, limit: number): Promise<number> {
    const [result] = await this.pool.query<ResultSetHeader>(
      `DELETE FROM notice_revocations WHERE state = 'done' AND requested_at_ms < ? AND NOT EXISTS (SELECT 1 FROM notice_delivery_events e
        WHERE e.source_name = notice_revocations.source_name AND e.app_code = notice_revocations.app_code AND e.source_event_id =
          notice_revocations.source_event_id)
        ORDER BY requested_at_ms LIMIT ?`,
      [beforeMs, limit],
    );
    return result.affectedRows;
  }

  /** Of these facts, the ones somebody asked to take back (checked by ingest before it records them: one statement). */
  async revokedAmong(facts: readonly FactKey[]): Promise<Set<string>> {
    if (facts.length === 0) return new Set();
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT source_name, app_code, source_event_id FROM notice_revocations WHERE (source_name, app_code, source_event_id) IN (${facts
        .map(() => '(?, ?, ?)')
        .join(', ')})`,
      facts.flatMap((f) => [f.sourceName, f.appCode, f.sourceEventId]),
    );
    return new Set(rows.map((r) => factString({ sourceName: String(r.source_name), appCode: String(r.app_code), sourceEventId: String(r.source_event_id) })));
  }

  async finish(fact: FactKey, outcome: string, nowMs: number): Promise<void> {
    await this.pool.query(
      "UPDATE notice_revocations SET state = 'done', done_at_ms = ?, outcome = ? WHERE source_name = ? AND app_code = ? AND source_event_id = ?",
      [nowMs, clipText(outcome, 1024), fact.sourceName, fact.appCode, fact.sourceEventId],
    );
  }
}

export const factString = (f: FactKey) => `${f.sourceName}\u0000${f.appCode}\u0000${f.sourceEventId}`;
