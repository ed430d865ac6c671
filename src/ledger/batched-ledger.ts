import DataLoader from 'dataloader';
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { toLedgerRow, type ClaimResult } from './repository.ts';
import type { LedgerKey, LedgerRow } from './types.ts';
import { retryOnDeadlock } from '../platform/deadlock-retry.ts';
import { groupKeys } from './key-groups.ts';
import { transitionGuard } from './transitions.ts';
import { NEWER_VERSION_STATUSES } from './status.ts';
import { groupCommit } from '../platform/group-commit.ts';

const TABLE = 'notice_delivery_events';

/** A newer version counts when it is sent or still on its way; a failed one did not reach the user. */
const NEWER_STATUSES = `status IN (${NEWER_VERSION_STATUSES.map((s) => `'${s}'`).join(', ')})`;

function keyString(key: LedgerKey): string {
  return `${key.sourceName}\u0000${key.appCode}\u0000${key.sourceEventId}\u0000${key.channel}`;
}

/**
 * Claims and "delivered" outcomes of concurrent jobs, coalesced: every call made in the same tick becomes one
 * statement for all of them (DataLoader batching). With 64 sends in flight this turns ~3 statements per event
 * into ~3 per batch. The SQL conditions are exactly the single-row ones in LedgerRepository, applied to a set.
 */
export class BatchedLedger {
  private readonly claims: DataLoader<LedgerKey, ClaimResult, string>;
  private readonly dueClaims: DataLoader<LedgerKey, ClaimResult, string>;
  private readonly delivered: DataLoader<{ key: LedgerKey; providerRef: string }, boolean, string>;
  private readonly newer: DataLoader<LedgerRow, string | null, string>;
  private readonly superseded: DataLoader<{ key: LedgerKey; newerEventId: string }, boolean, string>;

  constructor(
    private readonly pool: Pool,
    private readonly workerId: string,
    private readonly lockTtlFor: (sourceName: string) => number,
    private readonly now: () => number = Date.now,
    maxBatchSize = 200,
  ) {
    const claimSlot = groupCommit();
    const deliveredSlot = groupCommit();
    this.claims = new DataLoader((keys) => claimSlot.track(this.claimBatch(keys, false)), { cache: false, maxBatchSize, batchScheduleFn: claimSlot.schedule });
    const dueClaimSlot = groupCommit();
    this.dueClaims = new DataLoader((keys) => dueClaimSlot.track(this.claimBatch(keys, true)), {
      cache: false,
      maxBatchSize,
      batchScheduleFn: dueClaimSlot.schedule,
    });
    this.delivered = new DataLoader((items) => deliveredSlot.track(this.deliveredBatch(items)), {
      cache: false,
      maxBatchSize,
      batchScheduleFn: deliveredSlot.schedule,
    });
    const newerSlot = groupCommit();
    const supersededSlot = groupCommit();
    this.newer = new DataLoader((rows) => newerSlot.track(this.newerBatch(rows)), { cache: false, maxBatchSize, batchScheduleFn: newerSlot.schedule });
    this.superseded = new DataLoader((items) => supersededSlot.track(this.supersededBatch(items)), {
      cache: false,
      maxBatchSize,
      batchScheduleFn: supersededSlot.schedule,
    });
  }

  /**
   * The source_event_id of a newer version of this notice that is sent or still on its way (same supersede scope and
   * channel, higher version), or null. Rows without a scope have none.
   */
  newerVersion(row: LedgerRow): Promise<string | null> {
    if (!row.supersedeKey || row.supersedeVersion === null) return Promise.resolve(null);
    return this.newer.load(row);
  }

  /** delivering → superseded for a row this worker holds: no send, `newerEventId` replaced it. */
  recordSuperseded(key: LedgerKey, newerEventId: string): Promise<boolean> {
    return this.superseded.load({ key, newerEventId });
  }

  /**
   * Takes the row for this worker. `dueOnly` leaves a row that waits for its retry or its moment (next_retry_at_ms
   * still ahead) unclaimed: a batch job's first attempt run again after a failed hand-off must not cut that wait short.
   */
  claim(key: LedgerKey, options: { dueOnly?: boolean } = {}): Promise<ClaimResult> {
    return options.dueOnly ? this.dueClaims.load(key) : this.claims.load(key);
  }

  recordDelivered(key: LedgerKey, providerRef: string): Promise<boolean> {
    return this.delivered.load({ key, providerRef });
  }

  private async claimBatch(keys: readonly LedgerKey[], dueOnly: boolean): Promise<ClaimResult[]> {
    const nowMs = this.now();
    const byKey = new Map<string, LedgerRow>();
    const lockUntil = new Map<string, number>();
    for (const group of groupKeys(keys, (key) => key)) {
      // lock_ttl is per source, so one deadline per group.
      const until = lockUntil.get(group.sourceName) ?? nowMs + this.lockTtlFor(group.sourceName);
      lockUntil.set(group.sourceName, until);
      const guard = transitionGuard('claim', this.workerId, nowMs);
      await retryOnDeadlock(() =>
        this.pool.query<ResultSetHeader>(
          `UPDATE ${TABLE}
            SET status = 'delivering', locked_by = ?, lock_until_ms = ?, claim_count = claim_count + 1, updated_at_ms = ?
          WHERE ${group.where.sql} AND ${guard.sql}${dueOnly ? ' AND (next_retry_at_ms IS NULL OR next_retry_at_ms <= ?)' : ''}`,
          [this.workerId, until, nowMs, ...group.where.params, ...guard.params, ...(dueOnly ? [nowMs] : [])],
        ),
      );
      const [rows] = await this.pool.query<RowDataPacket[]>(`SELECT * FROM ${TABLE} WHERE ${group.where.sql}`, group.where.params);
      for (const r of rows) {
        const row = toLedgerRow(r);
        byKey.set(keyString(row), row);
      }
    }
    return keys.map((key) => {
      const row = byKey.get(keyString(key)) ?? null;
      // Ours exactly when it carries the lock we just wrote.
      const claimed = row !== null && row.status === 'delivering' && row.lockedBy === this.workerId && row.lockUntilMs === lockUntil.get(key.sourceName);
      return claimed ? { claimed: true, row } : { claimed: false, row };
    });
  }

  // One statement for the batch: per row the newest qualifying version, a backward scan of idx_nde_supersede that
  // stops at its first row.
  private async newerBatch(rows: readonly LedgerRow[]): Promise<Array<string | null>> {
    const parts = rows.map(
      (_, i) =>
        `(SELECT ${i} AS i, source_event_id FROM ${TABLE} WHERE supersede_key = ? AND supersede_version > ? AND channel = ? AND ${NEWER_STATUSES}
         ORDER BY supersede_version DESC LIMIT 1)`,
    );
    const [found] = await this.pool.query<RowDataPacket[]>(
      parts.join(' UNION ALL '),
      rows.flatMap((r) => [r.supersedeKey, r.supersedeVersion, r.channel]),
    );
    const byIndex = new Map(found.map((f) => [Number(f.i), String(f.source_event_id)]));
    return rows.map((_, i) => byIndex.get(i) ?? null);
  }

  private async supersededBatch(items: ReadonlyArray<{ key: LedgerKey; newerEventId: string }>): Promise<boolean[]> {
    const nowMs = this.now();
    const done = new Set<string>();
    for (const group of groupKeys(items, (item) => item.key)) {
      const byCases = group.items.map(() => 'WHEN ? THEN ?').join(' ');
      const guard = transitionGuard('recordSuperseded', this.workerId, nowMs);
      const [result] = await retryOnDeadlock(() =>
        this.pool.query<ResultSetHeader>(
          `UPDATE ${TABLE}
            SET status = 'superseded', superseded_by = CASE source_event_id ${byCases} END, next_retry_at_ms = NULL,
                last_error_code = NULL, last_error = NULL, locked_by = NULL, lock_until_ms = NULL, updated_at_ms = ?
          WHERE ${group.where.sql} AND ${guard.sql}`,
          [...group.items.flatMap((i) => [i.key.sourceEventId, i.newerEventId]), nowMs, ...group.where.params, ...guard.params],
        ),
      );
      if (result.affectedRows === group.items.length) {
        for (const i of group.items) done.add(keyString(i.key));
        continue;
      }
      // A lock was taken over meanwhile (rare): read back which rows this batch moved.
      const [rows] = await this.pool.query<RowDataPacket[]>(
        `SELECT source_event_id, status, superseded_by FROM ${TABLE} WHERE ${group.where.sql}`,
        group.where.params,
      );
      for (const r of rows) {
        const item = group.items.find((i) => i.key.sourceEventId === r.source_event_id);
        if (item && r.status === 'superseded' && r.superseded_by === item.newerEventId) done.add(keyString(item.key));
      }
    }
    return items.map((i) => done.has(keyString(i.key)));
  }

  private async deliveredBatch(items: ReadonlyArray<{ key: LedgerKey; providerRef: string }>): Promise<boolean[]> {
    const nowMs = this.now();
    const done = new Set<string>();
    for (const group of groupKeys(items, (item) => item.key)) {
      const msgKeyCases = group.items.map(() => 'WHEN ? THEN ?').join(' ');
      const guard = transitionGuard('recordDelivered', this.workerId, nowMs);
      const [result] = await retryOnDeadlock(() =>
        this.pool.query<ResultSetHeader>(
          `UPDATE ${TABLE}
            SET status = 'delivered', provider_ref = CASE source_event_id ${msgKeyCases} END, delivered_at_ms = ?, next_retry_at_ms = NULL,
                last_error_code = NULL, last_error = NULL, attempt_count = attempt_count + 1,
                locked_by = NULL, lock_until_ms = NULL, updated_at_ms = ?
          WHERE ${group.where.sql} AND ${guard.sql}`,
          [...group.items.flatMap((i) => [i.key.sourceEventId, i.providerRef]), nowMs, nowMs, ...group.where.params, ...guard.params],
        ),
      );
      if (result.affectedRows === group.items.length) {
        for (const i of group.items) done.add(`${keyString(i.key)}\u0000${i.providerRef}`);
        continue;
      }
      // Some lock was taken over meanwhile (rare): read back which rows turned delivered by this batch.
      const [rows] = await this.pool.query<RowDataPacket[]>(
        `SELECT source_name, app_code, source_event_id, channel, status, provider_ref FROM ${TABLE} WHERE ${group.where.sql}`,
        group.where.params,
      );
      for (const r of rows)
        if (r.status === 'delivered') done.add(`${r.source_name}\u0000${r.app_code}\u0000${r.source_event_id}\u0000${r.channel}\u0000${r.provider_ref}`);
    }
    return items.map((i) => done.has(`${keyString(i.key)}\u0000${i.providerRef}`));
  }
}
