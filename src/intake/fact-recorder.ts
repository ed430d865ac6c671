import type { Logger } from 'pino';
import type { LedgerRepository } from '../ledger/repository.ts';
import type { LedgerKey, NewLedgerRow } from '../ledger/types.ts';
import type { MappedEvent } from '../notices/types.ts';
import type { NoticeMetrics } from '../observability/metrics.ts';

/** One source fact, mapped by its notice module, with its ledger identity. */
export interface SourceFact {
  key: LedgerKey;
  mapped: MappedEvent;
  sourceRowId: number | null;
  sourceCreatedAtMs: number | null;
}

export interface PendingDelivery {
  key: LedgerKey;
  eventType: string;
}

/** Hands pending rows to the transport (BullMQ); must throw if they were not durably enqueued. */
export type EnqueueDeliveries = (items: readonly PendingDelivery[]) => Promise<void>;

export interface RecordCounts {
  ingested: number;
  skipped: number;
  malformed: number;
}

/**
 * The one way a fact enters notice-service, whichever entry it came by (outbox poller, MQ consumer): ledger
 * insert-if-absent, then enqueue. When this resolves, every fact is durable and queued; when it throws, the caller
 * must not advance its cursor or ack its message. Both steps are idempotent, so repeating them is always safe.
 */
export class FactRecorder {
  constructor(
    private readonly ledger: LedgerRepository,
    private readonly enqueue: EnqueueDeliveries,
    private readonly logger: Logger,
    private readonly metrics?: NoticeMetrics,
    private readonly now: () => number = Date.now,
  ) {}

  async record(facts: readonly SourceFact[]): Promise<RecordCounts> {
    const counts: RecordCounts = { ingested: 0, skipped: 0, malformed: 0 };
    const rows: NewLedgerRow[] = [];
    const pending: PendingDelivery[] = [];
    for (const { key, mapped, sourceRowId, sourceCreatedAtMs } of facts) {
      this.metrics?.ingestEvents.inc({ source: key.sourceName, event_type: mapped.eventType.slice(0, 64) || 'unknown', result: mapped.kind === 'notice' ? 'ingested' : mapped.kind === 'skip' ? 'skipped' : 'malformed' });
      if (mapped.kind === 'skip') {
        counts.skipped++;
        continue;
      }
      const base = { ...key, eventType: mapped.eventType, userId: mapped.userId.slice(0, 64), noticeKind: mapped.noticeKind, sourceRowId, sourceCreatedAtMs };
      if (mapped.kind === 'malformed') {
        counts.malformed++;
        this.logger.warn({ source: key.sourceName, event_id: key.sourceEventId, source_row_id: sourceRowId, reason: mapped.reason }, 'malformed source event recorded as failed');
        rows.push({ ...base, status: 'failed', payload: null, lastErrorCode: 'MALFORMED', lastError: mapped.reason });
      } else {
        counts.ingested++;
        rows.push({ ...base, status: 'pending', payload: mapped.payload, lastErrorCode: null, lastError: null });
        pending.push({ key, eventType: mapped.eventType });
      }
    }
    try {
      if (rows.length > 0) await this.ledger.insertIfAbsent(rows, this.now());
      if (pending.length > 0) await this.enqueue(pending);
    } catch (err) {
      if (facts[0]) this.metrics?.enqueueErrors.inc({ source: facts[0].key.sourceName });
      throw err;
    }
    return counts;
  }
}
