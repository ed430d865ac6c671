import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import type { LedgerRepository } from '../src/ledger/repository.ts';
import type { NoticeConfig } from '../src/config/schema.ts';
import type { NoticeMetrics } from '../src/observability/metrics.ts';
import { describeError } from '../src/platform/errors.ts';
import { deliverJobId, enqueueDeliveries, type DeliverJobData } from '../queues/deliver-queue.ts';

const LIVE_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/** Take or keep the lock: set it if free, extend it if ours. One script, so two processes never both hold it. */
const LOCK_SCRIPT = `
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`;

export interface ReconcilePass {
  leader: boolean;
  stranded: number;
  requeued: number;
  live: number;
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
      queue: Queue<DeliverJobData>;
      redis: Redis;
      config: NoticeConfig;
      owner: string;
      maxRetryFor: (source: string) => number;
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
    await this.deps.redis.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0", 1, this.lockKey, this.deps.owner).catch(() => undefined);
  }

  async runOnce(nowMs = Date.now()): Promise<ReconcilePass> {
    const { ledger, queue, config, logger, metrics } = this.deps;
    const pass: ReconcilePass = { leader: false, stranded: 0, requeued: 0, live: 0, purged: 0 };
    const held = await this.deps.redis.eval(LOCK_SCRIPT, 1, this.lockKey, this.deps.owner, String(config.reconciler.interval * 3));
    if (Number(held) !== 1) return pass;
    pass.leader = true;

    const stranded = await ledger.findStranded(nowMs, config.reconciler.pending_grace, config.reconciler.batch_size);
    pass.stranded = stranded.length;
    const toEnqueue: typeof stranded = [];
    for (const row of stranded) {
      const job = await queue.getJob(deliverJobId(row));
      const state = job ? await job.getState() : 'missing';
      if (LIVE_STATES.has(state)) {
        pass.live++;
        continue;
      }
      // A finished job with the same id would swallow the add: clear it first.
      if (job) await job.remove().catch(() => undefined);
      toEnqueue.push(row);
    }
    if (toEnqueue.length > 0) {
      await enqueueDeliveries(queue, toEnqueue.map((row) => ({ key: row, eventType: row.eventType, maxRetryCount: this.deps.maxRetryFor(row.sourceName) })));
      pass.requeued = toEnqueue.length;
      for (const row of toEnqueue) metrics?.reconcilerRequeued.inc({ status: row.status });
      logger.warn({ requeued: toEnqueue.length, sample_event_ids: toEnqueue.slice(0, 5).map((r) => r.sourceEventId) }, 'reconciler re-enqueued ledger rows that had no live job');
    }

    const retention = config.retention;
    for (const status of ['delivered', 'failed'] as const) {
      const keepMs = retention[status];
      if (keepMs <= 0) continue;
      const purged = await ledger.purgeFinal(status, nowMs - keepMs, retention.purge_batch_size);
      if (purged > 0) {
        pass.purged += purged;
        metrics?.ledgerPurged.inc({ status }, purged);
      }
    }
    return pass;
  }
}
