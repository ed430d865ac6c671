import type { Logger } from 'pino';
import { WakeableSleep } from '../app/wakeable-sleep.ts';
import { describeError } from '../platform/errors.ts';
import type { OutboxWorkerConfig } from '../config/schema.ts';
import type { FactRecorder } from '../intake/fact-recorder.ts';
import type { SourceFact } from '../facts/types.ts';
import type { NoticeMetrics } from '../observability/metrics.ts';
import { advanceCursor, countGapIds, rewoundTo, type CursorState } from './gap-tracker.ts';
import type { CursorStore } from './cursor-store.ts';
import { OutboxIdTooLargeError, type OutboxReader } from './reader.ts';
import { rowIdentity, type OutboxSource } from './source.ts';
import type { GapWatchStore } from './gap-watch-store.ts';
import { LateCommitWatch } from './late-commit-watch.ts';
import type { OutboxRow } from '../facts/types.ts';

export interface PollerStats {
  polls: number;
  rowsRead: number;
  ingested: number;
  /** Facts recorded without a job because their app's queues were full. */
  parked: number;
  skipped: number;
  malformed: number;
  gapsSkipped: number;
  /** Rows found in holes after gap_grace (late commits). */
  lateRows: number;
  /** Polls that read no new rows because the deliver queue was full (max_queued_jobs). */
  backpressuredPolls: number;
  errors: number;
  lastEventAtMs: number | null;
}

export interface PollResult {
  leader: boolean;
  newRows: number;
  filledGaps: number;
  /** True when the read hit batch_size: more rows are waiting, poll again at once. */
  full: boolean;
}

export interface OutboxPollerDeps {
  source: OutboxSource;
  /**
   * This reader's own name for its cursor, gap watch, metrics and readiness: the source name for a source on one
   * server, `<source>:<shard>` for each shard of a sharded one. Ledger keys always carry the source name.
   */
  name?: string;
  config: OutboxWorkerConfig;
  reader: OutboxReader;
  cursors: CursorStore;
  /** Holes past gap_grace, re-checked for late commits up to late_commit_horizon. */
  gapWatch: GapWatchStore;
  recorder: FactRecorder;
  owner: string;
  logger: Logger;
  metrics?: NoticeMetrics;
  /** Jobs waiting or delayed in this source's kinds' queues, per app group ('' = the default group), for max_queued_jobs. */
  queueDepth?: () => Promise<Map<string, number>>;
  /** Of these outbox rows, the ids whose fact the ledger recorded from that very row (LedgerRepository.recordedAtRows). */
  recordedAtRows?: (sourceName: string, rows: ReadonlyArray<{ appCode: string; sourceEventId: string; rowId: number }>) => Promise<Set<number>>;
  /** The app group an app_code's jobs go to (DeliverQueues.appGroupOf); all in one group without it. */
  appGroupOf?: (appCode: string) => string;
  now?: () => number;
}

/**
 * Moves committed outbox rows into the ledger and onto the queue. The order is what makes it crash-safe:
 * record (ledger insert-if-absent, then enqueue), then (only then) the cursor. A crash anywhere repeats work that
 * the ledger key and the job id make idempotent; nothing is marked read that is not enqueued.
 */
export class OutboxPoller {
  readonly stats: PollerStats = {
    polls: 0,
    rowsRead: 0,
    ingested: 0,
    parked: 0,
    skipped: 0,
    malformed: 0,
    gapsSkipped: 0,
    lateRows: 0,
    backpressuredPolls: 0,
    errors: 0,
    lastEventAtMs: null,
  };
  private state: CursorState | null = null;
  /** Set after a failed poll: re-read the cursor from MySQL and check it against the outbox before reading on. */
  private reloadCursor = false;
  private leaseUntilMs = 0;
  /** Look at the queue depth before the next read: only after a read that found rows, so an idle poll stays one query. */
  private checkDepth = true;
  private holdingBack = false;
  /** App groups whose queues held max_queued_jobs at the last check: their facts are recorded without a job. */
  private fullGroups = new Set<string>();
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly pause = new WakeableSleep();
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly watch: LateCommitWatch;
  /** When a poll last ended without error (caught up, read rows, or held back by backpressure). */
  private lastProgressMs: number;
  private lastError: { message: string; safe: boolean } | null = null;
  private readonly name: string;

  constructor(private readonly deps: OutboxPollerDeps) {
    this.now = deps.now ?? Date.now;
    this.name = deps.name ?? deps.source.sourceName;
    this.log = deps.logger.child({ source: deps.name ?? deps.source.sourceName });
    this.lastProgressMs = this.now();
    this.watch = new LateCommitWatch({
      sourceName: deps.name ?? deps.source.sourceName,
      store: deps.gapWatch,
      reader: deps.reader,
      gapGraceMs: deps.config.gap_grace,
      horizonMs: deps.config.late_commit_horizon,
      logger: this.log,
      metrics: deps.metrics,
    });
    deps.metrics?.onScrape(`outbox_lag:${deps.name ?? deps.source.sourceName}`, () => this.collectLag());
  }

  /** Scrape-time gauges: one primary-key read of the outbox, never on the polling path. */
  private async collectLag(): Promise<void> {
    const metrics = this.deps.metrics!;
    const source = this.name;
    const state = this.state;
    if (state) metrics.openGaps.set({ source }, countGapIds(state.gaps));
    if (state) metrics.watchedGapIds.set({ source }, await this.deps.gapWatch.watchedIds(source));
    if (this.stats.lastEventAtMs !== null) metrics.secondsSinceLastEvent.set({ source }, (this.now() - this.stats.lastEventAtMs) / 1000);
    const stalled = this.health() !== 'ok';
    metrics.stalled.set({ source }, stalled ? 1 : 0);
    metrics.secondsSinceProgress.set({ source }, (this.now() - this.lastProgressMs) / 1000);
    if (!state) return; // standing by: the lease holder reports lag
    const newest = await this.deps.reader.newest();
    if (!newest) return;
    metrics.rowsBehind.set({ source }, Math.max(0, newest.id - state.highWaterId));
    // Lag is the age of the oldest row not read yet: it grows while a source is stuck, whatever was read last.
    const oldest = newest.id > state.highWaterId ? await this.deps.reader.oldestUnreadCreatedAt(state.highWaterId) : null;
    metrics.ingestLagMs.set({ source }, oldest === null ? 0 : Math.max(0, this.now() - oldest));
  }

  get sourceName(): string {
    return this.name;
  }

  /** 'ok', or why this source has not advanced for longer than stall_threshold (for readiness). */
  health(): string {
    const stalledMs = this.now() - this.lastProgressMs;
    if (!this.running || stalledMs <= this.deps.config.stall_threshold) return 'ok';
    const why = this.lastError ? (this.lastError.safe ? this.lastError.message : 'polls fail (the process log says why)') : 'no poll finished';
    return `stalled for ${Math.round(stalledMs / 1000)} s: ${why}`;
  }

  get cursor(): CursorState | null {
    return this.state;
  }

  get isRunning(): boolean {
    return this.running;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.pause.wake();
    await this.loop;
    if (this.state) {
      await this.deps.cursors.release(this.name, this.deps.owner).catch(() => undefined);
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      const startedMs = this.now();
      // Polls start every poll_interval (not poll_interval after the previous one ended), so a row waits at most
      // one interval plus one poll.
      let delay = this.deps.config.poll_interval;
      try {
        const result = await this.pollOnce();
        failures = 0;
        this.lastProgressMs = this.now();
        this.lastError = null;
        delay = result.full ? 0 : Math.max(0, this.deps.config.poll_interval - (this.now() - startedMs));
      } catch (err) {
        failures++;
        this.stats.errors++;
        // Only our own messages may reach the unauthenticated readiness answer; a driver's names users and hosts.
        this.lastError = { message: (err as Error).message, safe: err instanceof OutboxIdTooLargeError };
        // MySQL or Redis is unavailable: nothing advanced; wait longer each time, up to 30 s, then retry.
        delay = Math.min(30_000, this.deps.config.poll_interval * 2 ** Math.min(failures, 6));
        this.log.warn({ err: describeError(err), retry_in_ms: delay }, 'outbox poll failed; cursor not advanced');
        // The cursor in memory may no longer match MySQL (a failover promoted a replica that is behind): the next
        // poll re-reads it and checks it against the outbox before reading on. (An id beyond 2^53 is no such doubt.)
        if (!(err instanceof OutboxIdTooLargeError)) this.reloadCursor = true;
      }
      if (delay > 0 && this.running) await this.pause.sleep(delay);
    }
  }

  async pollOnce(): Promise<PollResult> {
    const { config, reader, cursors } = this.deps;
    this.stats.polls++;
    const startedMs = this.now();
    if (!(await this.holdLease(startedMs))) return { leader: false, newRows: 0, filledGaps: 0, full: false };
    const state = this.state!;

    const holdBack = await this.queueIsFull();
    if (holdBack) this.fullGroups.clear();
    // Each read starts at the row the cursor passed last and checks it is still that fact: a failover can swap the
    // server under an open pool without a failed query, and a cursor ahead of its outbox skips the owner's next rows.
    const verify = !holdBack && state.highWaterId > 0 && state.highWaterRow != null;
    const read = holdBack ? [] : await reader.readAfter(verify ? state.highWaterId - 1 : state.highWaterId, config.batch_size + (verify ? 1 : 0));
    if (verify) {
      const atCursor = read[0]?.id === state.highWaterId ? read[0] : undefined;
      if (!atCursor || rowIdentity(atCursor) !== state.highWaterRow) {
        const held = await this.rewindUnlessSame(atCursor, this.now());
        return { leader: held, newRows: 0, filledGaps: 0, full: held };
      }
    }
    const newRows = verify ? read.slice(1) : read;
    this.checkDepth = holdBack || newRows.length > 0;
    const filled = state.gaps.length > 0 ? await reader.readGaps(state.gaps, config.batch_size) : [];
    const rows = [...filled, ...newRows];
    this.stats.rowsRead += rows.length;

    if (rows.length > 0) await this.recordRows(rows);

    const { state: next, skipped } = advanceCursor(
      state,
      newRows.map((r) => r.id),
      filled.map((r) => r.id),
      this.now(),
      config.gap_grace,
    );
    // The cursor remembers which row it passed, so a re-read cursor can tell whether the outbox is the one it read.
    if (next.highWaterId !== state.highWaterId) {
      const top = newRows.find((r) => r.id === next.highWaterId);
      next.highWaterRow = top ? rowIdentity(top) : null;
    } else next.highWaterRow = state.highWaterRow ?? null;
    const chunks = this.watch.chunksFor(skipped, this.now());
    this.stats.gapsSkipped += countGapIds(skipped);
    const changed = next.highWaterId !== state.highWaterId || JSON.stringify(next.gaps) !== JSON.stringify(state.gaps);
    if (changed) {
      const nowMs = this.now();
      if (await cursors.save(this.name, this.deps.owner, state.highWaterId, next, nowMs, config.lock_ttl, { store: this.deps.gapWatch, chunks })) {
        this.state = next;
        this.leaseUntilMs = nowMs + config.lock_ttl;
        this.watch.watched(chunks, nowMs);
      } else {
        // The row kept the lease owner and the high-water id this process saved last; either moved: another process
        // took over, or MySQL is not the one it wrote to (a failover to a replica that lacked the last saves).
        this.log.warn('ingest lease lost to another process, or the cursor in MySQL is not the one this process saved (a failover); re-reading it');
        this.state = null;
        return { leader: false, newRows: newRows.length, filledGaps: filled.length, full: false };
      }
    }
    this.stats.lateRows += await this.watch.checkDue(this.now(), (late) => this.recordRows(late));
    const blocked = reader.blockedId();
    if (blocked !== null) throw new OutboxIdTooLargeError(blocked);
    return { leader: true, newRows: newRows.length, filledGaps: filled.length, full: newRows.length === config.batch_size };
  }

  /** Rows → facts → ledger and queue; throws (and nothing counts as read) if they are not durable. */
  private async recordRows(rows: readonly OutboxRow[]): Promise<void> {
    const { source, recorder } = this.deps;
    const recordedAtMs = this.now();
    const facts: SourceFact[] = rows.map((row) => {
      const identity = source.identify(row);
      return {
        key: { sourceName: source.sourceName, appCode: identity.appCode, sourceEventId: identity.sourceEventId },
        mapped: source.map(row, recordedAtMs),
        sourceRowId: row.id,
        sourceCreatedAtMs: identity.sourceCreatedAtMs,
        ...(identity.problem ? { problem: identity.problem } : {}),
      };
    });
    const full = this.fullGroups;
    const groupOf = this.deps.appGroupOf ?? (() => '');
    const counts = await recorder.record(facts, full.size === 0 ? {} : { parked: (key) => full.has(groupOf(key.appCode)) });
    this.stats.ingested += counts.ingested;
    this.stats.parked += counts.parked;
    this.stats.skipped += counts.skipped;
    this.stats.malformed += counts.malformed;
    this.stats.lastEventAtMs = recordedAtMs;
  }

  /**
   * Backpressure per app group: a group whose queues hold max_queued_jobs has its facts recorded without a job (the
   * reconciler enqueues them when there is room), so one app's storm neither fills Redis nor holds the others back.
   * Only when every group is full is nothing new read (the outbox keeps the rest). Holes are re-read meanwhile, so a
   * row that commits late is not given up on only because delivery was slow.
   */
  private async queueIsFull(): Promise<boolean> {
    const { config, queueDepth, metrics } = this.deps;
    if (config.max_queued_jobs === 0 || !queueDepth || !this.checkDepth) {
      this.fullGroups.clear();
      return false;
    }
    const depths = await queueDepth();
    const full = new Set([...depths].filter(([, n]) => n >= config.max_queued_jobs).map(([group]) => group));
    const everyGroup = depths.size > 0 && full.size === depths.size;
    for (const group of full)
      if (!this.fullGroups.has(group) && !everyGroup)
        this.log.info(
          { app_group: group || 'default', max_queued_jobs: config.max_queued_jobs },
          "an app's deliver queues are full; its new facts are recorded without a job until they drain (the reconciler enqueues them)",
        );
    this.fullGroups = full;
    if (everyGroup !== this.holdingBack) {
      this.holdingBack = everyGroup;
      metrics?.backpressured.set({ source: this.name }, everyGroup ? 1 : 0);
      const depth = [...depths.values()].reduce((a, b) => a + b, 0);
      if (everyGroup)
        this.log.info({ queued_jobs: depth, max_queued_jobs: config.max_queued_jobs }, 'deliver queue is full; reading no new outbox rows until it drains');
      else this.log.info({ queued_jobs: depth }, 'deliver queue has room again; reading the outbox');
    }
    if (everyGroup) this.stats.backpressuredPolls++;
    return everyGroup;
  }

  /** Renews the lease only when half of it is used, so a busy poll costs no extra statement. */
  private async holdLease(nowMs: number): Promise<boolean> {
    const { config, cursors } = this.deps;
    if (this.state && !this.reloadCursor && this.leaseUntilMs - nowMs > config.lock_ttl / 2) return true;
    const startAt = async () => (config.start_from === 'latest' ? ((await this.deps.reader.newest())?.id ?? 0) : 0);
    const acquired = await cursors.acquire(this.name, this.deps.owner, nowMs, config.lock_ttl, startAt);
    if (!acquired) {
      this.state = null;
      return false;
    }
    this.leaseUntilMs = nowMs + config.lock_ttl;
    if (!this.state || this.reloadCursor) {
      const first = !this.state;
      this.state = await cursors.load(this.name);
      this.watch.forget();
      this.log.info(
        { high_water_id: this.state.highWaterId, open_gap_ids: countGapIds(this.state.gaps) },
        first ? 'ingest lease acquired' : 'ingest cursor re-read after a failed poll',
      );
      // Whenever the cursor is (re)loaded — at start, and after any failed poll — it is checked against the outbox
      // (one primary-key read): a cursor ahead of its outbox would skip the owner's next rows for good.
      const held = await this.checkAgainstOutbox(nowMs);
      this.reloadCursor = false;
      return held;
    }
    return true;
  }

  /**
   * A cursor re-read from MySQL is checked against the outbox before anything is read past it. After a failover to
   * a replica that lacked the last rows, the promoted outbox hands out those ids again, to other facts: the row at
   * the cursor is then missing or another one, and the cursor goes back to the newest row whose fact the ledger
   * recorded from that very row. Going back re-reads rows the ledger already has (idempotent); not going back would
   * skip the owner's new rows for good.
   */
  private async checkAgainstOutbox(nowMs: number): Promise<boolean> {
    const state = this.state!;
    if (state.highWaterId === 0) return true;
    const [atCursor] = await this.deps.reader.readGaps([[state.highWaterId, state.highWaterId, 0]], 1);
    return this.rewindUnlessSame(atCursor, nowMs);
  }

  /** Given the outbox row at the cursor's high-water id (or none), keeps the cursor or takes it back (see above). */
  private async rewindUnlessSame(atCursor: OutboxRow | undefined, nowMs: number): Promise<boolean> {
    const { config, cursors, reader } = this.deps;
    const state = this.state!;
    const known = state.highWaterRow ?? null;
    if (atCursor && (known === null || rowIdentity(atCursor) === known)) return true;
    let target: { id: number; row: string | null };
    if (known === null) {
      // A cursor saved before rows were remembered: only an outbox whose newest id is below it is caught.
      const newest = (await reader.newest())?.id ?? 0;
      if (newest >= state.highWaterId) return true;
      target = { id: newest, row: null };
    } else target = await this.lastRecordedRow(state.highWaterId - 1);
    this.log.error(
      {
        high_water_id: state.highWaterId,
        rewound_to: target.id,
        row_at_cursor: atCursor ? 'another fact' : 'missing',
      },
      "the outbox is not the one this source's cursor read: the row at the cursor is missing or another fact (a MySQL failover to a replica that " +
        "lacked the last rows, or a restore). The owner's new rows would take ids the cursor had passed, so the cursor goes back to the newest row the " +
        "ledger recorded; facts whose rows are gone from the outbox are the owner's loss (those already recorded stay in the ledger)",
    );
    this.deps.metrics?.outboxRewound.inc({ source: this.name });
    const rewound = rewoundTo(state, target.id) ?? state;
    rewound.highWaterRow = target.row;
    if (!(await cursors.save(this.name, this.deps.owner, state.highWaterId, rewound, nowMs, config.lock_ttl))) {
      this.state = null;
      return false;
    }
    this.state = rewound;
    this.watch.forget();
    return true;
  }

  /** The newest row at or below `fromId` whose fact the ledger recorded from that row; walks down 500 rows a read. */
  private async lastRecordedRow(fromId: number): Promise<{ id: number; row: string | null }> {
    const { reader, source, recordedAtRows } = this.deps;
    let below = fromId;
    for (let read = 0; read < 40 && below > 0; read++) {
      const rows = await reader.readDown(below, 500);
      if (rows.length === 0) return { id: 0, row: null };
      const facts = rows.map((row) => {
        const identity = source.identify(row);
        return { appCode: identity.appCode, sourceEventId: identity.sourceEventId, rowId: row.id };
      });
      const recorded = recordedAtRows ? await recordedAtRows(source.sourceName, facts) : new Set<number>();
      const top = rows.find((r) => recorded.has(r.id));
      if (top) return { id: top.id, row: rowIdentity(top) };
      below = rows.at(-1)!.id - 1;
    }
    // 20,000 rows and none recorded (all of types this service skips?): re-read from there; the ledger dedups.
    return { id: Math.max(0, below), row: null };
  }
}
