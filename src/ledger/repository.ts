import type { PurgeableStatus } from './status.ts';
import { createHash } from 'node:crypto';
import type { Pool } from 'mysql2/promise';
import type { ResultSetHeader, RowDataPacket } from 'mysql2';
import type { LedgerKey, LedgerRow, NewLedgerRow } from './types.ts';
import { retryOnDeadlock } from '../platform/deadlock-retry.ts';
import { groupKeys } from './key-groups.ts';
import { clipText } from '../platform/text.ts';
import { valueBytesBound, writeInChunks } from '../platform/statement-size.ts';
import { inFlightSql, transitionGuard, type LedgerStatement } from './transitions.ts';

const TABLE = 'notice_delivery_events';
const INSERT_COLUMNS =
  '(source_name, app_code, source_event_id, channel, event_type, user_id, notice_kind, status, payload, ' +
  'last_error_code, last_error, attempt_count, source_row_id, source_created_at_ms, created_at_ms, updated_at_ms, supersede_key, supersede_version, ' +
  'batch_job_id)';
const INSERT_ROW = '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)';

/** An upper bound of a new row's bytes in the INSERT: its strings (the payload dominates) and fixed-size values. */
function ledgerRowBytes(r: NewLedgerRow): number {
  return (
    valueBytesBound(r.payload) +
    valueBytesBound(r.sourceEventId) +
    valueBytesBound(r.userId) +
    valueBytesBound(r.lastError) +
    3 * (r.sourceName.length + r.appCode.length + r.channel.length + r.eventType.length + r.noticeKind.length) +
    (r.supersede ? 3 * r.supersede.scope.length : 0) +
    (r.batchJobId ? 3 * r.batchJobId.length : 0) +
    300
  );
}

function insertStatement(rows: readonly NewLedgerRow[], nowMs: number): { sql: string; params: unknown[] } {
  // One flat array pushed row by row: flatMap's array per row was most of this method's time in ingest's profile.
  const params: unknown[] = [];
  for (const r of rows)
    params.push(
      r.sourceName,
      r.appCode,
      r.sourceEventId,
      r.channel,
      r.eventType,
      r.userId,
      r.noticeKind,
      r.status,
      r.payload,
      r.lastErrorCode,
      clip(r.lastError),
      r.sourceRowId,
      r.sourceCreatedAtMs,
      nowMs,
      nowMs,
      r.supersede ? supersedeKey(r.supersede.scope) : null,
      r.supersede ? r.supersede.version : null,
      r.batchJobId ?? null,
    );
  const placeholders = rows.map(() => INSERT_ROW).join(', ');
  // `ON DUPLICATE KEY UPDATE` with a no-op (rather than INSERT IGNORE) keeps real errors such as truncation loud.
  return { sql: `INSERT INTO ${TABLE} ${INSERT_COLUMNS} VALUES ${placeholders} ON DUPLICATE KEY UPDATE source_name = source_name`, params };
}
const KEY_WHERE = 'source_name = ? AND app_code = ? AND source_event_id = ? AND channel = ?';
const MAX_ERROR_LENGTH = 1024;

function keyParams(key: LedgerKey): string[] {
  return [key.sourceName, key.appCode, key.sourceEventId, key.channel];
}

function clip(text: string | null): string | null {
  return text === null ? null : clipText(text, MAX_ERROR_LENGTH);
}

export type ClaimResult = { claimed: true; row: LedgerRow } | { claimed: false; row: LedgerRow | null };

/**
 * The code that writes `notice_delivery_events` (with BatchedLedger for the two hot-path writes). Every state
 * change is one conditional statement, so the row's status and lock are the single arbiter between workers.
 */
export class LedgerRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * Insert-if-absent for a batch: one statement, or a few when the rows' bytes would pass the server's
   * max_allowed_packet (payloads are stored once per channel). Existing rows (any status) are left untouched. A row
   * that cannot fit even alone throws StatementTooLargeError (a data error: the caller records it as failed).
   */
  async insertIfAbsent(rows: readonly NewLedgerRow[], nowMs: number): Promise<number> {
    if (rows.length === 0) return 0;
    let affected = 0;
    await writeInChunks(
      this.pool,
      rows,
      ledgerRowBytes,
      (chunk) => insertStatement(chunk, nowMs),
      async (sql, params) => {
        const [result] = await retryOnDeadlock(() => this.pool.query<ResultSetHeader>(sql, params));
        affected += result.affectedRows;
      },
    );
    return affected;
  }

  async get(key: LedgerKey): Promise<LedgerRow | null> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`SELECT * FROM ${TABLE} WHERE ${KEY_WHERE}`, keyParams(key));
    return rows[0] ? toLedgerRow(rows[0]) : null;
  }

  // Claims and "delivered" outcomes go through BatchedLedger (batched-ledger.ts), which coalesces concurrent jobs.

  async recordRetryable(key: LedgerKey, workerId: string, code: string, message: string, nextRetryAtMs: number, nowMs: number): Promise<boolean> {
    return this.finishAttempt(
      'recordRetryable',
      key,
      workerId,
      nowMs,
      `status = 'retryable', provider_ref = NULL, next_retry_at_ms = ?, last_error_code = ?, last_error = ?, attempt_count = attempt_count + 1`,
      [nextRetryAtMs, code, clip(message)],
    );
  }

  async recordFailed(key: LedgerKey, workerId: string, code: string, message: string, nowMs: number): Promise<boolean> {
    return this.finishAttempt(
      'recordFailed',
      key,
      workerId,
      nowMs,
      `status = 'failed', provider_ref = NULL, next_retry_at_ms = NULL, last_error_code = ?, last_error = ?, attempt_count = attempt_count + 1`,
      [code, clip(message)],
    );
  }

  /** Sent, but the answer was lost and the channel does not resend (push: a resend may show twice). */
  async recordUnconfirmed(key: LedgerKey, workerId: string, ref: string, code: string, message: string, nowMs: number): Promise<boolean> {
    return this.finishAttempt(
      'recordUnconfirmed',
      key,
      workerId,
      nowMs,
      `status = 'delivered_unconfirmed', provider_ref = ?, delivered_at_ms = ?, next_retry_at_ms = NULL, last_error_code = ?, last_error = ?, ` +
        `attempt_count = attempt_count + 1`,
      [ref, nowMs, code, clip(message)],
    );
  }

  /**
   * Notes on rows this worker holds that a request which cannot be safely repeated is about to go out (`ref` in
   * provider_ref, e.g. a push's DataId): if the process dies before the answer is recorded, the next claim sees it and
   * applies the channel's ambiguity policy instead of sending blind. Returns the keys it marked (a row whose lock was
   * lost meanwhile is not). Definite outcomes (retryable, failed, released) clear the mark.
   */
  async markSending(keys: readonly LedgerKey[], workerId: string, ref: string, nowMs: number): Promise<LedgerKey[]> {
    const guard = transitionGuard('markSending', workerId, nowMs);
    const marked: LedgerKey[] = [];
    for (const group of groupKeys(keys, (key) => key)) {
      const [result] = await retryOnDeadlock(() =>
        this.pool.query<ResultSetHeader>(`UPDATE ${TABLE} SET provider_ref = ?, updated_at_ms = ? WHERE ${group.where.sql} AND ${guard.sql}`, [
          ref,
          nowMs,
          ...group.where.params,
          ...guard.params,
        ]),
      );
      if (result.affectedRows === group.items.length) {
        marked.push(...group.items);
        continue;
      }
      const [rows] = await this.pool.query<RowDataPacket[]>(
        `SELECT source_event_id FROM ${TABLE} WHERE ${group.where.sql} AND provider_ref = ? AND locked_by = ?`,
        [...group.where.params, ref, workerId],
      );
      const ids = new Set(rows.map((r) => String(r.source_event_id)));
      marked.push(...group.items.filter((k) => ids.has(k.sourceEventId)));
    }
    return marked;
  }

  /**
   * Give the row back without spending an attempt (the provider asked the whole queue to slow down). The claim is
   * taken back too, so claim_count - attempt_count keeps counting only sends that never finished.
   */
  /** Finished without a send: a newer version of the same notice (`newerEventId`) is in the ledger already. */
  async recordSuperseded(key: LedgerKey, workerId: string, newerEventId: string, nowMs: number): Promise<boolean> {
    return this.finishAttempt(
      'recordSuperseded',
      key,
      workerId,
      nowMs,
      `status = 'superseded', superseded_by = ?, next_retry_at_ms = NULL, last_error_code = NULL, last_error = NULL`,
      [newerEventId],
    );
  }

  /** Finished without a send: the notice was older than its kind's expire_after when its turn came. */
  async recordExpired(key: LedgerKey, workerId: string, reason: string, nowMs: number): Promise<boolean> {
    return this.finishAttempt(
      'recordExpired',
      key,
      workerId,
      nowMs,
      `status = 'expired', next_retry_at_ms = NULL, last_error_code = 'EXPIRED', last_error = ?`,
      [reason.slice(0, 1024)],
    );
  }

  /**
   * A user's sends on a channel since `sinceMs` — delivered, unconfirmed, or being worked — for a cap whose Redis
   * window was lost: over idx_nde_user, rows created up to a day before the window (a send can come well after its
   * row). A row being worked that is not yet marked as going out (`inFlight`) may have been admitted just before the
   * loss, so the cap holds a place for it until that row asks again.
   */
  async recentSends(
    appCode: string,
    userId: string,
    channel: string,
    sinceMs: number,
  ): Promise<Array<LedgerKey & { atMs: number; inFlight: boolean; noticeKind: string }>> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT source_name, app_code, source_event_id, channel, notice_kind, updated_at_ms, status, provider_ref FROM ${TABLE}
        WHERE user_id = ? AND created_at_ms >= ? AND app_code = ? AND channel = ? AND updated_at_ms >= ?
          AND status IN ('delivered', 'delivered_unconfirmed', 'delivering')`,
      [userId, sinceMs - 86_400_000, appCode, channel, sinceMs],
    );
    return rows.map((r) => ({
      sourceName: r.source_name,
      appCode: r.app_code,
      sourceEventId: r.source_event_id,
      channel: r.channel,
      noticeKind: r.notice_kind,
      atMs: Number(r.updated_at_ms),
      inFlight: r.status === 'delivering' && r.provider_ref === null,
    }));
  }

  /** Finished without a send by a user's choice: `reason` is preference or frequency_cap (kept as the code). */
  async recordSuppressed(key: LedgerKey, workerId: string, reason: string, detail: string, nowMs: number): Promise<boolean> {
    return this.finishAttempt('recordSuppressed', key, workerId, nowMs, `status = 'suppressed', next_retry_at_ms = NULL, last_error_code = ?, last_error = ?`, [
      reason.toUpperCase().slice(0, 32),
      detail.slice(0, 1024),
    ]);
  }

  /** Counted in a digest window: its leader's summary carries it; never sent on its own. */
  async recordDigested(key: LedgerKey, workerId: string, detail: string, nowMs: number): Promise<boolean> {
    return this.finishAttempt(
      'recordDigested',
      key,
      workerId,
      nowMs,
      `status = 'digested', next_retry_at_ms = NULL, last_error_code = 'DIGEST', last_error = ?`,
      [clip(detail)],
    );
  }

  /** A push held for escalate_after whose inbox item was read (or archived, or deleted) first: never sent. */
  async recordSkippedRead(key: LedgerKey, workerId: string, detail: string, nowMs: number): Promise<boolean> {
    return this.finishAttempt(
      'recordSkippedRead',
      key,
      workerId,
      nowMs,
      `status = 'skipped_read', next_retry_at_ms = NULL, last_error_code = 'READ', last_error = ?`,
      [clip(detail)],
    );
  }

  /** Not its moment yet (quiet hours): the claim is given back unspent and the row waits, in MySQL, until `dueAtMs`. */
  async recordDeferred(key: LedgerKey, workerId: string, reason: string, detail: string, dueAtMs: number, nowMs: number): Promise<boolean> {
    return this.finishAttempt(
      'recordDeferred',
      key,
      workerId,
      nowMs,
      `status = 'deferred', provider_ref = NULL, next_retry_at_ms = ?, last_error_code = ?, last_error = ?, claim_count = claim_count - 1`,
      [dueAtMs, reason.toUpperCase().slice(0, 32), clip(detail)],
    );
  }

  async releaseRateLimited(key: LedgerKey, workerId: string, code: string, message: string, nextRetryAtMs: number, nowMs: number): Promise<boolean> {
    return this.finishAttempt(
      'releaseRateLimited',
      key,
      workerId,
      nowMs,
      `status = 'retryable', provider_ref = NULL, next_retry_at_ms = ?, last_error_code = ?, last_error = ?, claim_count = claim_count - 1`,
      [nextRetryAtMs, code, clip(message)],
    );
  }

  /** Deferred rows, and those whose moment passed more than `overdueMs` ago: a range scan of idx_nde_status_retry. */
  async countDeferred(nowMs: number, overdueMs: number): Promise<{ waiting: number; overdue: number }> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT COUNT(*) AS waiting, COALESCE(SUM(next_retry_at_ms < ?), 0) AS overdue FROM ${TABLE} FORCE INDEX (idx_nde_status_retry) WHERE status =
        'deferred'`,
      [nowMs - overdueMs],
    );
    return { waiting: Number(rows[0]!.waiting), overdue: Number(rows[0]!.overdue) };
  }

  /**
   * Rows that should be in flight, for the reconciler; each part is a range scan on an index and bounded by
   * `limit`: pending older than a grace (idx_nde_status_updated), retryable past due (idx_nde_status_retry),
   * delivering with an expired lock (idx_nde_status_updated, then the lock test on those few rows).
   */
  async findStranded(
    nowMs: number,
    pendingGraceMs: number,
    limit: number,
  ): Promise<Array<LedgerKey & { eventType: string; noticeKind: string; status: string; userId: string; batchJobId: string | null }>> {
    const columns = 'source_name, app_code, source_event_id, channel, event_type, notice_kind, status, user_id, batch_job_id';
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `(SELECT ${columns} FROM ${TABLE} FORCE INDEX (idx_nde_status_updated) WHERE status = 'pending' AND updated_at_ms < ? ORDER BY updated_at_ms LIMIT ?)
       UNION ALL
       (SELECT ${columns} FROM ${TABLE} FORCE INDEX (idx_nde_status_retry) WHERE status = 'retryable' AND next_retry_at_ms < ? ORDER BY
         next_retry_at_ms LIMIT ?)
       UNION ALL
       (SELECT ${columns} FROM ${TABLE} FORCE INDEX (idx_nde_status_retry) WHERE status = 'deferred' AND next_retry_at_ms < ? ORDER BY next_retry_at_ms LIMIT ?)
       UNION ALL
       (SELECT ${columns} FROM ${TABLE} FORCE INDEX (idx_nde_status_updated) WHERE status = 'delivering' AND updated_at_ms < ? AND lock_until_ms < ?
         ORDER BY updated_at_ms LIMIT ?)`,
      [nowMs - pendingGraceMs, limit, nowMs - pendingGraceMs, limit, nowMs - pendingGraceMs, limit, nowMs - pendingGraceMs, nowMs, limit],
    );
    return rows.map((r) => ({
      sourceName: r.source_name,
      appCode: r.app_code,
      sourceEventId: r.source_event_id,
      channel: r.channel,
      eventType: r.event_type,
      noticeKind: r.notice_kind,
      status: r.status,
      userId: r.user_id,
      batchJobId: r.batch_job_id ?? null,
    }));
  }

  /**
   * The reconciler gave these rows a job again at `nowMs`: their stranded clock restarts (updated_at_ms, and
   * next_retry_at_ms for retryable rows), so the next page of the same pass reaches the rows behind them and a later
   * pass looks at them again only after the grace. A row changed since `readAtMs` (a worker got to it) is left alone.
   */
  async markRequeued(keys: readonly LedgerKey[], readAtMs: number, nowMs: number): Promise<void> {
    for (const group of groupKeys(keys, (key) => key)) {
      await retryOnDeadlock(() =>
        this.pool.query<ResultSetHeader>(
          `UPDATE ${TABLE}
            SET next_retry_at_ms = CASE WHEN status IN ('retryable', 'deferred') THEN ? ELSE next_retry_at_ms END, updated_at_ms = ?
          WHERE ${group.where.sql} AND ${inFlightSql()} AND updated_at_ms < ?`,
          [nowMs, nowMs, ...group.where.params, readAtMs],
        ),
      );
    }
  }

  /** Deletes up to `limit` final rows of one status older than the cutoff; never touches a row still in flight. */
  async purgeFinal(status: PurgeableStatus, olderThanMs: number, limit: number): Promise<number> {
    const [result] = await this.pool.query<ResultSetHeader>(`DELETE FROM ${TABLE} WHERE status = ? AND updated_at_ms < ? ORDER BY updated_at_ms LIMIT ?`, [
      status,
      olderThanMs,
      limit,
    ]);
    return result.affectedRows;
  }

  /**
   * Operator requeue: failed → pending with a fresh retry budget. The previous error stays in last_error until the
   * next attempt overwrites it. Returns the keys that actually moved.
   */
  /** A fact's rows on every channel (a revocation works them off one by one). */
  /** Of these outbox rows (a source's facts with their row ids), the ids whose fact the ledger recorded from that very row. */
  async recordedAtRows(sourceName: string, rows: ReadonlyArray<{ appCode: string; sourceEventId: string; rowId: number }>): Promise<Set<number>> {
    if (rows.length === 0) return new Set();
    const [found] = await this.pool.query<RowDataPacket[]>(
      `SELECT DISTINCT app_code, source_event_id, source_row_id FROM ${TABLE} WHERE source_name = ? AND (app_code, source_event_id) IN
        (${rows.map(() => '(?, ?)').join(', ')})`,
      [sourceName, ...rows.flatMap((r) => [r.appCode, r.sourceEventId])],
    );
    const at = (appCode: string, eventId: string, rowId: number) => `${appCode}\u0000${eventId}\u0000${rowId}`;
    const recorded = new Set(found.map((r) => at(String(r.app_code), String(r.source_event_id), Number(r.source_row_id))));
    return new Set(rows.filter((r) => recorded.has(at(r.appCode, r.sourceEventId, r.rowId))).map((r) => r.rowId));
  }

  async rowsOfFact(fact: Omit<LedgerKey, 'channel'>): Promise<LedgerRow[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(`SELECT * FROM ${TABLE} WHERE source_name = ? AND app_code = ? AND source_event_id = ?`, [
      fact.sourceName,
      fact.appCode,
      fact.sourceEventId,
    ]);
    return rows.map(toLedgerRow);
  }

  /** A revoked row that was never sent: it ends revoked and no worker will send it (a claim skips final rows). */
  async revokeUnsent(key: LedgerKey, reason: string, nowMs: number): Promise<boolean> {
    return this.revocationStep('revokeUnsent', key, nowMs, `status = 'revoked', next_retry_at_ms = NULL, last_error_code = 'REVOKED', last_error = ?`, [
      clip(reason),
    ]);
  }

  /** A sent row is claimed for withdrawal: only one revoker wins, so the provider is asked once. */
  async startWithdrawal(key: LedgerKey, nowMs: number): Promise<boolean> {
    return this.revocationStep('startWithdrawal', key, nowMs, `status = 'revoking'`, []);
  }

  async recordWithdrawn(key: LedgerKey, note: string, nowMs: number): Promise<boolean> {
    return this.revocationStep('recordWithdrawn', key, nowMs, `status = 'revoked', last_error_code = 'REVOKED', last_error = ?`, [clip(note)]);
  }

  private async revocationStep(statement: LedgerStatement, key: LedgerKey, nowMs: number, assignments: string, params: unknown[]): Promise<boolean> {
    const guard = transitionGuard(statement, '', nowMs);
    const [result] = await this.pool.query<ResultSetHeader>(
      `UPDATE ${TABLE} SET ${assignments}, locked_by = NULL, lock_until_ms = NULL, updated_at_ms = ? WHERE ${KEY_WHERE} AND ${guard.sql}`,
      [...params, nowMs, ...keyParams(key), ...guard.params],
    );
    return result.affectedRows === 1;
  }

  async requeueFailed<K extends LedgerKey>(keys: readonly K[], nowMs: number): Promise<K[]> {
    const moved: K[] = [];
    for (const key of keys) {
      const guard = transitionGuard('requeueFailed', '', nowMs);
      const [result] = await this.pool.query<ResultSetHeader>(
        `UPDATE ${TABLE} SET status = 'pending', attempt_count = 0, claim_count = 0, next_retry_at_ms = NULL, locked_by = NULL, lock_until_ms = NULL,
          updated_at_ms = ?
          WHERE ${KEY_WHERE} AND ${guard.sql} AND payload IS NOT NULL`,
        [nowMs, ...keyParams(key), ...guard.params],
      );
      if (result.affectedRows === 1) moved.push(key);
    }
    return moved;
  }

  private async finishAttempt(
    statement: LedgerStatement,
    key: LedgerKey,
    workerId: string,
    nowMs: number,
    assignments: string,
    params: unknown[],
  ): Promise<boolean> {
    const guard = transitionGuard(statement, workerId, nowMs);
    const [result] = await this.pool.query<ResultSetHeader>(
      `UPDATE ${TABLE} SET ${assignments}, locked_by = NULL, lock_until_ms = NULL, updated_at_ms = ?
        WHERE ${KEY_WHERE} AND ${guard.sql}`,
      [...params, nowMs, ...keyParams(key), ...guard.params],
    );
    return result.affectedRows === 1;
  }
}

/** The stored form of a supersede scope: fixed-size bytes, whatever the identifiers' lengths. */
export function supersedeKey(scope: string): Buffer {
  return createHash('sha256').update(scope).digest();
}

function num(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'number' ? value : Number(value);
}

export function toLedgerRow(r: RowDataPacket): LedgerRow {
  return {
    sourceName: r.source_name,
    appCode: r.app_code,
    sourceEventId: r.source_event_id,
    channel: r.channel,
    eventType: r.event_type,
    userId: r.user_id,
    noticeKind: r.notice_kind,
    status: r.status,
    attemptCount: Number(r.attempt_count),
    claimCount: Number(r.claim_count),
    lockedBy: r.locked_by,
    lockUntilMs: num(r.lock_until_ms),
    nextRetryAtMs: num(r.next_retry_at_ms),
    lastErrorCode: r.last_error_code,
    lastError: r.last_error,
    payload: r.payload === null ? null : String(r.payload),
    providerRef: r.provider_ref,
    sourceRowId: num(r.source_row_id),
    sourceCreatedAtMs: num(r.source_created_at_ms),
    createdAtMs: Number(r.created_at_ms),
    updatedAtMs: Number(r.updated_at_ms),
    deliveredAtMs: num(r.delivered_at_ms),
    supersedeVersion: r.supersede_version === null || r.supersede_version === undefined ? null : String(r.supersede_version),
    supersedeKey: r.supersede_key ? Buffer.from(r.supersede_key) : null,
    supersededBy: r.superseded_by ?? null,
    batchJobId: r.batch_job_id ?? null,
  };
}
