import { valueBytesBound, writeInChunks } from '../platform/statement-size.ts';
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import type { LedgerKey } from './types.ts';
import { clipText } from '../platform/text.ts';

export type HistoryEvent =
  | 'retryable'
  | 'failed'
  | 'poison'
  | 'superseded'
  | 'suppressed'
  | 'expired'
  | 'skipped_read'
  | 'digested'
  | 'deferred'
  | 'delivered'
  | 'delivered_unconfirmed'
  | 'requeued';

export interface HistoryEntry {
  key: LedgerKey;
  atMs: number;
  event: HistoryEvent;
  actor: string;
  errorCode?: string | null;
  errorMessage?: string | null;
  latencyMs?: number | null;
}

/**
 * notice_delivery_history: what happened to a delivery besides a first-try success. Appends made in the same tick go
 * in one INSERT (the failure paths of concurrent jobs), and a failed append never fails the delivery it describes:
 * the ledger row stays the truth, the history is the story.
 */
export class DeliveryHistory {
  private pending: Array<{ entry: HistoryEntry; done: () => void }> = [];
  private scheduled = false;

  constructor(
    private readonly pool: Pool,
    private readonly onError: (err: Error) => void = () => undefined,
  ) {}

  append(entry: HistoryEntry): Promise<void> {
    return new Promise((done) => {
      this.pending.push({ entry, done });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    this.scheduled = false;
    try {
      await writeInChunks(
        this.pool,
        batch,
        ({ entry: e }) =>
          valueBytesBound(e.key.sourceEventId) + valueBytesBound(e.key.appCode) + 3 * Math.min(e.errorMessage?.length ?? 0, 1024) + 3 * 191 + 300,
        (chunk) => ({
          sql: `INSERT INTO notice_delivery_history (source_name, app_code, source_event_id, channel, at_ms, event, actor, error_code, error_message,
            latency_ms) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
          params: chunk.flatMap(({ entry: e }) => [
            e.key.sourceName,
            e.key.appCode,
            e.key.sourceEventId,
            e.key.channel,
            e.atMs,
            e.event,
            clipText(e.actor, 191),
            e.errorCode ?? null,
            e.errorMessage ? clipText(e.errorMessage, 1024) : null,
            e.latencyMs ?? null,
          ]),
        }),
        async (sql, params) => {
          await this.pool.query<ResultSetHeader>(sql, params);
        },
      );
    } catch (err) {
      this.onError(err as Error);
    } finally {
      for (const { done } of batch) done();
    }
  }

  /** The history of these events (idx_ndh_event), oldest first, keyed by formatted ledger key. */
  async forEvents(
    eventIds: readonly string[],
  ): Promise<
    Array<{ key: LedgerKey; atMs: number; event: string; actor: string; errorCode: string | null; errorMessage: string | null; latencyMs: number | null }>
  > {
    if (eventIds.length === 0) return [];
    const [rows] = await this.pool.query<RowDataPacket[]>(
      `SELECT * FROM notice_delivery_history WHERE source_event_id IN (${eventIds.map(() => '?').join(', ')}) ORDER BY at_ms, id LIMIT 1000`,
      [...eventIds],
    );
    return rows.map((r) => ({
      key: { sourceName: r.source_name, appCode: r.app_code, sourceEventId: r.source_event_id, channel: r.channel },
      atMs: Number(r.at_ms),
      event: String(r.event),
      actor: String(r.actor),
      errorCode: r.error_code ?? null,
      errorMessage: r.error_message ?? null,
      latencyMs: r.latency_ms === null ? null : Number(r.latency_ms),
    }));
  }

  /** Deletes up to `limit` entries older than the cutoff (idx_ndh_at). */
  async purge(olderThanMs: number, limit: number): Promise<number> {
    const [result] = await this.pool.query<ResultSetHeader>('DELETE FROM notice_delivery_history WHERE at_ms < ? ORDER BY at_ms LIMIT ?', [olderThanMs, limit]);
    return result.affectedRows;
  }
}
