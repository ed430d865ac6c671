import type { Logger } from 'pino';
import type { NoticeMetrics } from '../observability/metrics.ts';
import type { OutboxRow } from '../facts/types.ts';
import { PeriodicSummary } from '../platform/periodic-summary.ts';
import { countGapIds, type GapRange } from './gap-tracker.ts';
import { afterCheck, chunksFor, type WatchChunk } from './gap-watch.ts';
import type { GapWatchStore } from './gap-watch-store.ts';
import type { OutboxReader } from './reader.ts';

/** Chunks re-checked per poll at most: the re-check stays a bounded addition to a poll. */
const CHUNKS_PER_POLL = 4;
const SUMMARY_INTERVAL_MS = 60_000;

export interface LateCommitWatchDeps {
  sourceName: string;
  store: GapWatchStore;
  reader: OutboxReader;
  gapGraceMs: number;
  horizonMs: number;
  logger: Logger;
  metrics?: NoticeMetrics;
}

/**
 * The poller's memory of holes it stopped waiting for. Idle polls cost nothing here: the soonest due time is kept
 * in memory, and only when it has come does a poll read the due chunks (≤ 4, one primary-key statement each).
 */
export class LateCommitWatch {
  private nextDueMs: number | null = null;
  private loaded = false;
  private readonly givenUp: PeriodicSummary<'ranges' | 'ids'>;
  private readonly abandoned: PeriodicSummary<'ids'>;

  constructor(private readonly deps: LateCommitWatchDeps) {
    const horizon = `${Math.round(deps.horizonMs / 60_000)} min`;
    this.givenUp = new PeriodicSummary(SUMMARY_INTERVAL_MS, (t, since) =>
      deps.logger.info(
        { hole_ranges: t.ranges, hole_ids: t.ids, since_ms: Number.isFinite(since) ? since : undefined },
        `outbox id holes not committed within gap_grace; re-checking them for late commits for up to ${horizon} (rolled-back inserts and sparse ids ` +
          `look the same)`,
      ),
    );
    this.abandoned = new PeriodicSummary(SUMMARY_INTERVAL_MS, (t) =>
      deps.logger.info({ hole_ids: t.ids }, 'outbox id holes still empty after late_commit_horizon; no longer watched'),
    );
  }

  /** The chunks to store with the cursor save that gives these holes up. */
  chunksFor(skipped: readonly GapRange[], nowMs: number): WatchChunk[] {
    return chunksFor(skipped, nowMs, this.deps.gapGraceMs, this.deps.horizonMs);
  }

  /** After the cursor save stored them. */
  watched(chunks: readonly WatchChunk[], nowMs: number): void {
    if (chunks.length === 0) return;
    const ids = chunks.reduce((n, c) => n + c.holeIds, 0);
    this.deps.metrics?.gapsSkipped.inc({ source: this.deps.sourceName }, ids);
    this.givenUp.add(nowMs, { ranges: chunks.reduce((n, c) => n + c.ranges.length, 0), ids });
    const soonest = Math.min(...chunks.map((c) => c.nextCheckAtMs));
    if (this.nextDueMs === null || soonest < this.nextDueMs) this.nextDueMs = soonest;
  }

  /** A new lease holder learns when its first check is due. */
  forget(): void {
    this.loaded = false;
  }

  /**
   * Re-checks the due chunks, hands rows found in them to `ingest` (which must make them durable, or throw), and
   * reschedules or drops each chunk. Returns the late rows found.
   */
  async checkDue(nowMs: number, ingest: (rows: OutboxRow[]) => Promise<void>): Promise<number> {
    const { store, sourceName, reader, logger, metrics } = this.deps;
    this.givenUp.tick(nowMs);
    this.abandoned.tick(nowMs);
    if (!this.loaded) {
      this.nextDueMs = await store.nextDueMs(sourceName);
      this.loaded = true;
    }
    if (this.nextDueMs === null || nowMs < this.nextDueMs) return 0;
    let found = 0;
    for (const chunk of await store.due(sourceName, nowMs, CHUNKS_PER_POLL)) {
      const rows = chunk.ranges.length > 0 ? await reader.readGaps(chunk.ranges, Math.min(countGapIds(chunk.ranges), 1000)) : [];
      if (rows.length > 0) {
        await ingest(rows);
        found += rows.length;
        metrics?.lateRows.inc({ source: sourceName }, rows.length);
        for (const row of rows) {
          const created = row.created_at_ms === null || row.created_at_ms === undefined ? null : Number(row.created_at_ms);
          logger.warn(
            { source_row_id: row.id, late_by_ms: nowMs - chunk.firstSeenMs, source_created_at_ms: created },
            'outbox row committed after gap_grace was found by the late-commit re-check and ingested',
          );
        }
      }
      const outcome = afterCheck(
        chunk,
        rows.map((r) => r.id),
        nowMs,
        this.deps.gapGraceMs,
        this.deps.horizonMs,
      );
      if (outcome.kind === 'watching') await store.reschedule(sourceName, outcome.chunk);
      else await store.remove(sourceName, chunk.fromId);
      if (outcome.kind === 'abandoned') {
        metrics?.gapsAbandoned.inc({ source: sourceName }, outcome.holeIds);
        this.abandoned.add(nowMs, { ids: outcome.holeIds });
      }
    }
    this.nextDueMs = await store.nextDueMs(sourceName);
    return found;
  }
}
