import { loadLuaScript, runLuaScript } from '../platform/lua-scripts.ts';
import { PURGEABLE_STATUSES } from '../ledger/status.ts';
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import type { LedgerRepository } from '../ledger/repository.ts';
import type { NoticeConfig } from '../config/schema.ts';
import type { NoticeMetrics } from '../observability/metrics.ts';
import { describeError } from '../platform/errors.ts';
import type { RejectStore } from '../intake/reject-store.ts';
import type { DeliveryHistory } from '../ledger/history.ts';
import { deliverJobId, enqueueDeliveries, type DeliverJobData, type DeliverQueues } from '../../queues/deliver-queue.ts';
import { clearForReadd, inspectJobs, notLive, type JobPresence } from '../../queues/job-repair.ts';

/** The leader lock's scripts (src/delivery/lua/). */
const LUA_DIR = new URL('./lua/', import.meta.url);
const TAKE_LOCK = loadLuaScript(LUA_DIR, 'takeLock-1');
const RELEASE_LOCK = loadLuaScript(LUA_DIR, 'releaseLock-1');

export interface ReconcilePass {
  leader: boolean;
  stranded: number;
  requeued: number;
  live: number;
  /** Orphan hashes still locked: a worker may be running them, so they are left for a later pass. */
  locked: number;
  purged: number;
}

/**
 * MySQL is the truth, Redis a work list that can be lost. Each pass (one process at a time, by a Redis lock) finds
 * ledger rows that should be in flight — pending past a grace, retryable past due, delivering with an expired
 * lock — and gives each one without a live job a job again, under the same deterministic id. It also purges final
 * rows past their retention. Both scans are bounded and indexed, so a pass costs the same on a huge ledger.
 */
export class Reconciler {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private current: Promise<unknown> = Promise.resolve();
  private readonly lockKey: string;

  constructor(
    private readonly deps: {
      ledger: LedgerRepository;
      queues: DeliverQueues;
      redis: Redis;
      config: NoticeConfig;
      owner: string;
      maxRetryFor: (source: string) => number;
      history?: Pick<DeliveryHistory, 'purge'>;
      rejects?: Pick<RejectStore, 'purge'>;
      /** Works off revocations (src/revoke/revoker.ts), one leader at a time. */
      revoker?: { workOff(): Promise<number>; purge?(beforeMs: number, limit: number): Promise<number> };
      /** The upgrade from the single-tag Redis layout (queues/legacy-layout.ts): moved on before rows are judged stranded. */
      legacy?: { pass(): Promise<{ moved: number; left: number; removed: number }>; close(): Promise<void> };
      /** Stop paging once the deliver queue holds this many waiting jobs (ingest's max_queued_jobs); none if absent. */
      maxQueuedJobs?: number;
      logger: Logger;
      metrics?: NoticeMetrics;
    },
  ) {
    this.lockKey = `${deps.config.redis.prefix}:reconciler:lock`;
  }

  start(): void {
    if (this.running || !this.deps.config.reconciler.enabled) return;
    this.running = true;
    const tick = () => {
      if (!this.running) return;
      this.current = this.runOnce()
        .catch((err) => this.deps.logger.warn({ err: describeError(err) }, 'reconciler pass failed; next pass will retry'))
        .finally(() => {
          if (this.running) this.timer = setTimeout(tick, this.deps.config.reconciler.interval);
        });
    };
    this.timer = setTimeout(tick, Math.min(1000, this.deps.config.reconciler.interval));
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await this.current;
    await this.deps.legacy?.close();
    await runLuaScript(this.deps.redis, RELEASE_LOCK, [this.lockKey], [this.deps.owner]).catch(() => undefined);
  }

  async runOnce(nowMs = Date.now()): Promise<ReconcilePass> {
    const { ledger, queues, config, logger, metrics } = this.deps;
    const pass: ReconcilePass = { leader: false, stranded: 0, requeued: 0, live: 0, locked: 0, purged: 0 };
    const held = await runLuaScript(this.deps.redis, TAKE_LOCK, [this.lockKey], [this.deps.owner, String(config.reconciler.interval * 3)]);
    if (Number(held) !== 1) return pass;
    pass.leader = true;

    const legacy = await this.deps.legacy?.pass().catch((err) => {
      logger.warn({ err: describeError(err) }, 'jobs of the single-tag layout not moved this pass; the next pass tries again');
      return null;
    });
    if (legacy && legacy.moved + legacy.removed > 0)
      logger.warn(legacy, "moved jobs of the single-tag Redis layout to their apps' own hash tags (an upgrade); removed the emptied old queues");

    // Page on while a page finds rows without a job: after Redis is lost every pending row is stranded, and one
    // page per interval rebuilt the work list at batch_size / interval (500 per 5 s: 101 events/s in the bench's
    // recovery phase), half of Tencent's 200/s. A page whose rows all have live jobs ends the pass (a healthy
    // backlog costs one page, as before); so do a full deliver queue (the bound ingest keeps, max_queued_jobs) and
    // the pass's time budget (one interval, well inside the lock's three).
    const budgetEnds = performance.now() + config.reconciler.interval;
    const maxQueued = this.deps.maxQueuedJobs ?? Infinity;
    for (let page = 0; ; page++) {
      const readAtMs = Date.now();
      const stranded = await ledger.findStranded(nowMs, config.reconciler.pending_grace, config.reconciler.batch_size);
      pass.stranded += stranded.length;
      const { requeued, live, locked } = await this.giveJobs(stranded);
      pass.requeued += requeued.length;
      pass.live += live;
      pass.locked += locked;
      if (requeued.length > 0) {
        await ledger.markRequeued(requeued, readAtMs, Date.now());
        for (const row of requeued) metrics?.reconcilerRequeued.inc({ status: row.status });
        logger.warn(
          { requeued: requeued.length, page, sample_event_ids: requeued.slice(0, 5).map((r) => r.sourceEventId) },
          'reconciler re-enqueued ledger rows that had no live job',
        );
      }
      if (requeued.length === 0 || stranded.length < config.reconciler.batch_size || performance.now() > budgetEnds) break;
      if (maxQueued !== Infinity && (await queues.queuedJobs()) >= maxQueued) break;
    }

    await this.deps.revoker?.workOff().catch((err) => logger.warn({ err: describeError(err) }, 'revocations not worked off this pass'));

    if (metrics) {
      // Deferred rows are released by their delayed jobs, or by the pass above once due; one still waiting a minute
      // after its moment means neither happened (notice_deferred_overdue alerts).
      const deferred = await ledger.countDeferred(nowMs, 60_000);
      metrics.deferred.set(deferred.waiting);
      metrics.deferredOverdue.set(deferred.overdue);
    }

    const retention = config.retention;
    // Each final status by the retention the status table gives it (superseded as delivered, unconfirmed as failed).
    for (const { status, retention: keep } of PURGEABLE_STATUSES) {
      const keepMs = retention[keep];
      if (keepMs <= 0) continue;
      const purged = await ledger.purgeFinal(status, nowMs - keepMs, retention.purge_batch_size);
      if (purged > 0) {
        pass.purged += purged;
        metrics?.ledgerPurged.inc({ status }, purged);
      }
    }
    // The delivery history goes with the delivered rows' retention (a failed row keeps its last error on the row).
    if (retention.delivered > 0) await this.deps.history?.purge(nowMs - retention.delivered, retention.purge_batch_size);
    if (retention.rejected > 0) {
      const purged = (await this.deps.rejects?.purge(nowMs - retention.rejected, retention.purge_batch_size)) ?? 0;
      if (purged > 0) {
        pass.purged += purged;
        metrics?.ledgerPurged.inc({ status: 'rejected_mq_message' }, purged);
      }
    }
    if (retention.revocations > 0) {
      const purged = (await this.deps.revoker?.purge?.(nowMs - retention.revocations, retention.purge_batch_size)) ?? 0;
      if (purged > 0) {
        pass.purged += purged;
        metrics?.ledgerPurged.inc({ status: 'revocation' }, purged);
      }
    }
    return pass;
  }

  /**
   * Gives every row without a live job a job again. Whatever stands under the id is cleared first — a finished job
   * or an orphan hash would swallow the add — except a locked orphan, which a worker may still be running: that row
   * is left for a later pass. Each add is checked afterwards, so a swallowed one is reported, not assumed done.
   */
  private async giveJobs(rows: Awaited<ReturnType<LedgerRepository['findStranded']>>): Promise<{ requeued: typeof rows; live: number; locked: number }> {
    const { queues, logger, metrics } = this.deps;
    const ids = rows.map((row) => deliverJobId(row));
    // Each row's job lives in its kind's queue: inspect and clear per queue.
    const presence: JobPresence[] = new Array(rows.length);
    const locked = new Set<string>();
    for (const [queue, at] of byQueue(queues, rows)) {
      const found = await inspectJobs(
        queue,
        this.deps.redis,
        at.map((i) => ids[i]!),
      );
      at.forEach((i, n) => (presence[i] = found[n]!));
      // A row whose first attempt rides in a batch job that is still live is queued, though it has no job of its own.
      const batchIds = [...new Set(at.map((i) => rows[i]!.batchJobId).filter((id): id is string => !!id))];
      if (batchIds.length > 0) {
        const batchPresence = await inspectJobs(queue, this.deps.redis, batchIds);
        const liveBatches = new Set(batchIds.filter((_, n) => batchPresence[n] === 'live'));
        for (const i of at) if (presence[i] !== 'live' && liveBatches.has(rows[i]!.batchJobId ?? '')) presence[i] = 'live';
      }
      const blocking = at.map((i) => ids[i]!).filter((_, n) => found[n] === 'finished' || found[n] === 'orphan');
      if (blocking.length > 0) for (const id of (await clearForReadd(queue, blocking)).locked) locked.add(id);
    }
    const orphans = ids.filter((_, i) => presence[i] === 'orphan');
    if (orphans.length > 0) {
      const cleared = orphans.filter((id) => !locked.has(id)).length;
      metrics?.orphanJobsCleared.inc(cleared);
      logger.warn(
        { orphans: orphans.length, cleared, locked: locked.size },
        'cleared job hashes that sat in no queue state (partial Redis loss) so their rows can be re-added',
      );
    }
    const requeued = rows.filter((_, i) => presence[i] !== 'live' && !locked.has(ids[i]!));
    if (requeued.length > 0) {
      await enqueueDeliveries(
        queues,
        requeued.map((row) => ({
          key: row,
          eventType: row.eventType,
          noticeKind: row.noticeKind,
          userId: row.userId,
          maxRetryCount: this.deps.maxRetryFor(row.sourceName),
        })),
      );
      const dropped: string[] = [];
      for (const [queue, at] of byQueue(queues, requeued))
        dropped.push(
          ...(await notLive(
            queue,
            this.deps.redis,
            at.map((i) => deliverJobId(requeued[i]!)),
          )),
        );
      if (dropped.length > 0)
        logger.warn({ dropped: dropped.length }, 'BullMQ dropped some re-adds (the id was taken meanwhile); a later pass looks at them again');
    }
    return { requeued, live: presence.filter((p) => p === 'live').length, locked: locked.size };
  }
}

/** Row positions grouped by the queue their kind's jobs live in. */
function byQueue(queues: DeliverQueues, rows: ReadonlyArray<{ channel: string; noticeKind: string }>): Map<Queue<DeliverJobData>, number[]> {
  const groups = new Map<Queue<DeliverJobData>, number[]>();
  rows.forEach((row, i) => {
    const queue = queues.queueFor(row);
    const list = groups.get(queue);
    if (list) list.push(i);
    else groups.set(queue, [i]);
  });
  return groups;
}
