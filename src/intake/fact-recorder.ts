import type { Logger } from 'pino';
import type { LedgerRepository } from '../ledger/repository.ts';
import type { LedgerKey, NewLedgerRow } from '../ledger/types.ts';
import type { ChannelRoutes } from '../channels/types.ts';
import type { FactKey, SourceFact } from '../facts/types.ts';

export type { FactKey, SourceFact } from '../facts/types.ts';
import type { NoticeMetrics } from '../observability/metrics.ts';
import { factString, type RevocationStore } from '../revoke/store.ts';
import { clipText, isDataError, keyProblem, recipientProblem, substituteKey } from './fact-validation.ts';

export interface PendingDelivery {
  key: LedgerKey;
  eventType: string;
  noticeKind: string;
  userId?: string;
  /** The batch job that carries the row's first attempt (PlanBatches), recorded with the row. */
  batchJobId?: string | null;
}

/** Hands pending rows to the transport (BullMQ), a row naming a batch job in that job; must throw if they were not durably enqueued. */
export type EnqueueDeliveries = (items: readonly PendingDelivery[]) => Promise<void>;

/** Each pending row's batch job (by index; null: a job of its own): planned before the insert, so each row records its job. */
export type PlanBatches = (items: readonly PendingDelivery[]) => ReadonlyArray<string | null>;

export interface RecordCounts {
  ingested: number;
  skipped: number;
  malformed: number;
  /** Facts recorded without a job because their app's queues are full (the reconciler gives them one later). */
  parked: number;
}

export interface RecordOptions {
  /** Facts to record in the ledger only, without a job: their app's queues are full (per-app backpressure). */
  parked?: (key: FactKey) => boolean;
}

/**
 * The one way a fact enters notice-service, whichever entry it came by (outbox poller, MQ consumer): one ledger row
 * per channel the fact is routed to (insert-if-absent, all in the same batch), then enqueue each. When this resolves, every fact is durable and
 * queued; when it throws, the caller
 * must not advance its cursor or ack its message. Both steps are idempotent, so repeating them is always safe.
 */
/** The channel column of a malformed fact in a deployment that routes nothing at all (deliver refuses to start). */
const UNROUTED = 'unrouted';

export class FactRecorder {
  constructor(
    private readonly ledger: LedgerRepository,
    private readonly enqueue: EnqueueDeliveries,
    /** Which channels a fact goes to (channel kinds and overrides in config). */
    private readonly routes: ChannelRoutes,
    private readonly logger: Logger,
    private readonly metrics?: NoticeMetrics,
    private readonly now: () => number = Date.now,
    /** Revocations: facts taken back before they arrive are recorded revoked, unsent; NoticeRevoked facts ask for one. */
    private readonly revocations?: Pick<RevocationStore, 'revokedAmong' | 'request'>,
    /** Batch jobs (deliver.rows_per_job); without it every row gets a job of its own. */
    private readonly planBatches?: PlanBatches,
  ) {}

  async record(facts: readonly SourceFact[], options: RecordOptions = {}): Promise<RecordCounts> {
    const counts: RecordCounts = { ingested: 0, skipped: 0, malformed: 0, parked: 0 };
    const rows: NewLedgerRow[] = [];
    const pending: PendingDelivery[] = [];
    // The ledger row of each pending delivery, by index.
    const pendingRows: NewLedgerRow[] = [];
    // One statement per batch: which of these facts somebody already asked to take back.
    const revoked = this.revocations ? await this.revocations.revokedAmong(facts.map((f) => f.key)) : new Set<string>();
    // A fact and its NoticeRevoked in the same batch: the fact is recorded revoked, never enqueued.
    for (const f of facts)
      if (f.mapped.kind === 'revoke') revoked.add(factString({ sourceName: f.key.sourceName, appCode: f.key.appCode, sourceEventId: f.mapped.targetEventId }));
    for (const fact of facts) {
      const { key, mapped, sourceRowId, sourceCreatedAtMs } = checkFact(fact);
      // Owner strings are unbounded: a label per known type, everything else one series.
      this.metrics?.ingestEvents.inc({
        source: key.sourceName,
        event_type: mapped.kind === 'skip' ? 'other' : mapped.eventType,
        result: mapped.kind === 'notice' ? 'ingested' : mapped.kind === 'skip' ? 'skipped' : 'malformed',
      });
      if (mapped.kind === 'skip') {
        counts.skipped++;
        continue;
      }
      if (mapped.kind === 'revoke') {
        // The owner takes back another fact of this source: a revocation, worked off by deliver (idempotent).
        counts.skipped++;
        if (this.revocations)
          await this.revocations.request(
            { sourceName: key.sourceName, appCode: key.appCode, sourceEventId: mapped.targetEventId },
            `owner:${key.sourceEventId}`,
            this.now(),
          );
        continue;
      }
      const takenBack = revoked.has(factString(key));
      const channels = this.routes(mapped.eventType, mapped.noticeKind);
      if (mapped.kind === 'malformed') {
        counts.malformed++;
        this.logger.warn(
          { source: key.sourceName, event_id: clipText(key.sourceEventId, 200), source_row_id: sourceRowId, reason: mapped.reason },
          'malformed source event recorded as failed',
        );
        // Once, under its first channel (or the deployment's first when its kind goes nowhere): the failure is the fact's.
        rows.push({
          sourceName: key.sourceName,
          appCode: key.appCode,
          sourceEventId: key.sourceEventId,
          channel: channels[0] ?? this.routes.fallback ?? UNROUTED,
          eventType: mapped.eventType,
          userId: mapped.userId,
          noticeKind: mapped.noticeKind,
          sourceRowId,
          sourceCreatedAtMs,
          status: 'failed',
          payload: null,
          lastErrorCode: 'MALFORMED',
          lastError: mapped.reason,
          supersede: null,
          batchJobId: null,
        });
      } else if (channels.length === 0) {
        // Configured to go nowhere (no channel takes its kind): nothing to deliver, like an unknown type.
        counts.skipped++;
      } else {
        counts.ingested++;
        // A parked fact is durable in the ledger (pending, no job yet): the reconciler enqueues it when its app has room.
        const parked = options.parked?.(key) === true;
        if (parked) counts.parked++;
        for (const channel of channels) {
          // Every field written out, batchJobId included (set below): a spread or a field added later puts these
          // per-row objects on V8's slow path, measurable in ingest's CPU.
          const row: NewLedgerRow = {
            sourceName: key.sourceName,
            appCode: key.appCode,
            sourceEventId: key.sourceEventId,
            channel,
            eventType: mapped.eventType,
            userId: mapped.userId,
            noticeKind: mapped.noticeKind,
            sourceRowId,
            sourceCreatedAtMs,
            status: takenBack ? 'revoked' : 'pending',
            payload: mapped.payload,
            lastErrorCode: takenBack ? 'REVOKED' : null,
            lastError: takenBack ? 'taken back before it arrived' : null,
            supersede: mapped.supersede ?? null,
            batchJobId: null,
          };
          rows.push(row);
          if (!parked && !takenBack) {
            pending.push({
              key: { sourceName: key.sourceName, appCode: key.appCode, sourceEventId: key.sourceEventId, channel },
              eventType: mapped.eventType,
              noticeKind: mapped.noticeKind,
              userId: mapped.userId,
              batchJobId: null,
            });
            pendingRows.push(row);
          }
        }
      }
    }
    // The batch a row rides in is written with the row: the reconciler counts a row of a live batch job as queued.
    if (this.planBatches && pending.length > 1) {
      const batches = this.planBatches(pending);
      for (let i = 0; i < pending.length; i++) pending[i]!.batchJobId = pendingRows[i]!.batchJobId = batches[i] ?? null;
    }
    try {
      if (rows.length > 0) await this.insertIsolating(rows, pending);
      if (pending.length > 0) await this.enqueue(pending);
    } catch (err) {
      if (facts[0]) this.metrics?.enqueueErrors.inc({ source: facts[0].key.sourceName });
      throw err;
    }
    return counts;
  }

  /**
   * One statement for the batch; if the server refuses a value in it, row by row, and a row still refused becomes a
   * failed row holding only its key and the server's reason. Infrastructure errors throw as they are.
   */
  private async insertIsolating(rows: NewLedgerRow[], pending: PendingDelivery[]): Promise<void> {
    try {
      await this.ledger.insertIfAbsent(rows, this.now());
      return;
    } catch (err) {
      if (!isDataError(err) || rows.length === 0) throw err;
    }
    for (const row of rows) {
      try {
        await this.ledger.insertIfAbsent([row], this.now());
      } catch (err) {
        if (!isDataError(err)) throw err;
        const reason = `the ledger refused this row: ${clipText((err as Error).message, 300)}`;
        this.logger.warn(
          { source: row.sourceName, event_id: clipText(row.sourceEventId, 200), source_row_id: row.sourceRowId, reason },
          'source event recorded as failed',
        );
        // Only the key (already checked to fit) and fixed values: nothing of the refused row can be refused again.
        await this.ledger.insertIfAbsent(
          [
            {
              ...row,
              eventType: clipText(row.eventType, 64),
              userId: '',
              noticeKind: '',
              status: 'failed',
              payload: null,
              lastErrorCode: 'MALFORMED',
              lastError: reason,
              sourceRowId: null,
              sourceCreatedAtMs: null,
            },
          ],
          this.now(),
        );
        const at = pending.findIndex((p) => p.key.sourceEventId === row.sourceEventId && p.key.appCode === row.appCode && p.key.channel === row.channel);
        if (at >= 0) pending.splice(at, 1);
      }
    }
  }
}

/**
 * The per-fact checks before anything reaches the ledger: an identity problem or an invalid recipient turns the fact
 * into a malformed one (with a substitute key when its own does not fit), so it is visible and the batch goes on.
 */
export function checkFact(fact: SourceFact): SourceFact {
  const { mapped } = fact;
  if (mapped.kind === 'skip') return fact;
  const keyIssue = keyProblem(fact.key.appCode, fact.key.sourceEventId);
  const key = keyIssue ? substituteKey(fact.key) : fact.key;
  if (mapped.kind === 'revoke') {
    const targetIssue = keyProblem(fact.key.appCode, mapped.targetEventId);
    const issue = [fact.problem, keyIssue, targetIssue && `payload.event_id: ${targetIssue}`].filter((p): p is string => !!p).join('; ');
    return issue
      ? { ...fact, key, mapped: { kind: 'malformed', eventType: mapped.eventType, userId: '', noticeKind: '', reason: clipText(issue, 1000) } }
      : fact;
  }
  const recipient = recipientProblem(mapped.userId);
  // An invalid recipient stops a notice; on a row that fails anyway it is only left out.
  const problem = [fact.problem, keyIssue, mapped.kind === 'notice' ? recipient : null].filter((p): p is string => !!p).join('; ');
  const userId = recipient === null ? mapped.userId : '';
  if (!problem) return mapped.kind === 'malformed' ? { ...fact, mapped: { ...mapped, userId } } : fact;
  const reason = clipText(mapped.kind === 'malformed' ? `${problem}; ${mapped.reason}` : problem, 1000);
  return { ...fact, key, mapped: { kind: 'malformed', eventType: mapped.eventType, userId, noticeKind: mapped.noticeKind, reason } };
}
