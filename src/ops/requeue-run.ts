import type { Pool } from 'mysql2/promise';
import { LedgerQueries, type FailedCursor, type FailedFilter } from '../ledger/queries.ts';
import { LedgerRepository } from '../ledger/repository.ts';
import { DeliveryHistory } from '../ledger/history.ts';
import type { LedgerKey, LedgerRow } from '../ledger/types.ts';
import type { DeliverQueues } from '../../queues/deliver-queue.ts';
import { AuditLog, type OperatorAction } from './audit-log.ts';
import { requeueFailed } from './requeue.ts';

export interface RequeueRunDeps {
  pool: Pool;
  /** null only for a dry run: counting the matching rows needs MySQL alone. */
  queues: DeliverQueues | null;
  maxRetryFor: (source: string) => number;
  now?: () => number;
}

/** Which failed rows: those a filter matches when the run starts, or the keys an operator picked. */
export type RequeueSelection = { filter: FailedFilter; detail: Record<string, unknown> } | { keys: readonly LedgerKey[] };

export interface RequeueProgress {
  matched: number;
  requeued: number;
  skipped: number;
}

export interface RequeueRunResult {
  matched: number;
  requeued: LedgerKey[];
  skipped: Array<{ key: LedgerKey; reason: string }>;
}

const PAGE = 200;

/**
 * The one requeue of failed rows, for the CLI and the dashboard. The set is fixed when the run starts: rows last
 * updated before then, walked once by keyset, so a requeued row that fails again during the run is never taken
 * twice. The audit row is written first and completed at the end; a run killed midway leaves it `running` with
 * its progress so far.
 */
export async function runRequeue(
  deps: RequeueRunDeps,
  who: Pick<OperatorAction, 'actor' | 'via'>,
  selection: RequeueSelection,
  options: { dryRun?: boolean; onProgress?: (p: RequeueProgress) => void | Promise<void> } = {},
): Promise<RequeueRunResult> {
  const now = deps.now ?? Date.now;
  const queues = deps.queues;
  if (!options.dryRun && !queues) throw new Error('a requeue needs the deliver queues (Redis); only a dry run counts without them');
  const startedAtMs = now();
  const ledger = new LedgerRepository(deps.pool);
  const audit = new AuditLog(deps.pool, now);
  const history = new DeliveryHistory(deps.pool);
  const result: RequeueRunResult = { matched: 0, requeued: [], skipped: [] };
  const detail =
    'keys' in selection
      ? { event_ids: selection.keys.slice(0, 20).map((k) => k.sourceEventId), ...(selection.keys.length > 20 ? { more: selection.keys.length - 20 } : {}) }
      : selection.detail;
  const progress = (state: string) => ({
    matched: result.matched,
    affected: result.requeued.length,
    detail: { ...detail, state, skipped: result.skipped.length, started_at_ms: startedAtMs, ...(state === 'running' ? {} : { ended_at_ms: now() }) },
  });
  const auditId = options.dryRun ? null : await audit.record({ ...who, action: 'requeue_failed', ...progress('running') });
  let state = 'done';
  try {
    for await (const page of pagesOf(deps.pool, ledger, selection, startedAtMs, result)) {
      result.matched += page.length;
      if (!options.dryRun) {
        const moved = await requeueFailed(ledger, queues!, page, deps.maxRetryFor, { history, actor: who.actor }, now());
        result.requeued.push(...moved.requeued);
        result.skipped.push(...moved.skipped);
        if (auditId !== null) await audit.update(auditId, progress('running'));
      }
      await options.onProgress?.({ matched: result.matched, requeued: result.requeued.length, skipped: result.skipped.length });
    }
  } catch (err) {
    state = `stopped by an error: ${(err as Error).message}`.slice(0, 300);
    throw err;
  } finally {
    if (auditId !== null) await audit.update(auditId, progress(state)).catch(() => undefined);
  }
  return result;
}

async function* pagesOf(
  pool: Pool,
  ledger: LedgerRepository,
  selection: RequeueSelection,
  startedAtMs: number,
  result: RequeueRunResult,
): AsyncGenerator<LedgerRow[]> {
  if ('keys' in selection) {
    const rows: LedgerRow[] = [];
    for (const key of selection.keys) {
      const row = await ledger.get(key);
      if (row) rows.push(row);
      else {
        result.matched += 1;
        result.skipped.push({ key, reason: 'no such ledger row' });
      }
    }
    yield rows;
    return;
  }
  const queries = new LedgerQueries(pool);
  let cursor: FailedCursor | null = null;
  do {
    const page: { rows: LedgerRow[]; next: FailedCursor | null } = await queries.failedBefore(startedAtMs, selection.filter, cursor, PAGE);
    if (page.rows.length > 0) yield page.rows;
    cursor = page.next;
  } while (cursor);
}
