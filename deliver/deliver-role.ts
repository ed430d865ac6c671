import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import type { NoticeConfig } from '../src/config/schema.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { outboxNoticeModules, sourcePolicy } from '../src/notices/registry.ts';
import { TencentImClient } from '../src/tencent-im/client.ts';
import { UserSigCache } from '../src/tencent-im/usersig.ts';
import { RoleConfigError, withDeadline, type Role } from '../src/app/role.ts';
import { newWorkerId } from '../src/app/worker-id.ts';
import type { DeliverJobData, DeliverQueues } from '../queues/deliver-queue.ts';
import { createDeliverProcessor, ledgerBackoff, type DeliveryOutcome } from './processor.ts';
import type { NoticeMetrics } from '../src/observability/metrics.ts';
import { Reconciler } from './reconciler.ts';
import { SendPacer } from './send-pacer.ts';
import { BatchedLedger } from '../src/ledger/batched-ledger.ts';
import { DeliveryHistory } from '../src/ledger/history.ts';

/** Deliver: a BullMQ worker on the C2C queue, sending through Tencent IM and recording outcomes in the ledger. */
export class DeliverRole implements Role {
  readonly name = 'deliver';
  readonly workerId = newWorkerId('deliver');
  readonly outcomes: Record<DeliveryOutcome, number> = { delivered: 0, retryable: 0, failed: 0, rate_limited: 0, superseded: 0 };
  private workers: Array<Worker<DeliverJobData>> = [];
  reconciler: Reconciler | null = null;
  private readonly client: TencentImClient;

  constructor(
    private readonly config: NoticeConfig,
    private readonly pool: Pool,
    private readonly connection: Redis,
    private readonly queues: DeliverQueues,
    private readonly producerRedis: Redis,
    private readonly logger: Logger,
    private readonly metrics?: NoticeMetrics,
  ) {
    const im = config.tencent_im;
    if (!im.enabled) {
      throw new RoleConfigError('deliver refuses to start: tencent_im.enabled is false, so every notice would be dropped. Enable it (or point tencent_im.base_url at fake-im)');
    }
    this.client = new TencentImClient(
      { baseUrl: im.base_url, sdkAppId: im.sdk_app_id, adminIdentifier: im.admin_identifier, requestTimeoutMs: im.request_timeout, msgLifeTimeMs: im.msg_lifetime, maxSockets: config.deliver.concurrency },
      new UserSigCache(im.sdk_app_id, im.secret_key, im.admin_identifier, im.usersig_ttl),
      logger,
    );
  }

  async start(): Promise<void> {
    const policyFor = sourcePolicy(this.config);
    // Tencent's quota is per app, not per process: the pacer's clock lives in Redis and every deliver process shares it.
    const longestSendMs = this.config.tencent_im.request_timeout * 2; // a re-sign can make it two requests
    const pacer = new SendPacer(this.connection, this.config.redis.prefix, this.config.tencent_im.rate_limit_per_second, () => this.metrics?.sendsRefused.inc());
    const processor = createDeliverProcessor({
      ledger: new LedgerRepository(this.pool),
      hot: new BatchedLedger(this.pool, this.workerId, (source) => policyFor(source).lockTtlMs),
      sender: this.client,
      workerId: this.workerId,
      policyFor,
      retryBaseMs: this.config.deliver.retry_base_delay,
      retryMaxMs: this.config.deliver.retry_max_delay,
      maxUnfinishedAttempts: this.config.deliver.max_unfinished_attempts,
      pacer,
      skipsSuperseded: (eventType) => this.config.deliver.skip_superseded[eventType] === true,
      priorityLeadMs: (kind) => this.config.deliver.priority[kind] ?? 0,
      sendTimeoutMs: longestSendMs,
      logger: this.logger,
      metrics: this.metrics,
      history: new DeliveryHistory(this.pool, (err) => this.logger.warn({ err: err.message }, 'could not write delivery history; the ledger row is unaffected')),
      onOutcome: (outcome) => this.outcomes[outcome]++,
    });
    // Several BullMQ workers share the concurrency (see fetchLanes): a burst starts sending after a few fetches. Each
    // queue has its own lanes, so a kind's jobs are claimed while another kind's backlog waits; the pacer then hands
    // out the quota by priority among everything claimed.
    const laneSizes = fetchLanes(this.config.deliver.concurrency);
    this.workers = this.queues.all.flatMap((queue) => laneSizes.map((concurrency) => new Worker<DeliverJobData>(queue.name, processor, {
      connection: this.connection,
      prefix: this.config.redis.prefix,
      concurrency,
      settings: { backoffStrategy: ledgerBackoff(this.config.deliver.retry_base_delay, this.config.deliver.retry_max_delay) },
      lockDuration: Math.max(this.config.deliver.job_lock_duration, longestSendMs),
      stalledInterval: this.config.deliver.job_lock_duration,
      maxStalledCount: 3,
      autorun: false,
    })));
    for (const worker of this.workers) {
      worker.on('error', (err) => this.logger.warn({ err: err.message }, 'deliver worker error'));
      void worker.run();
    }
    await Promise.all(this.workers.map((worker) => worker.waitUntilReady()));
    this.reconciler = new Reconciler({
      ledger: new LedgerRepository(this.pool), queues: this.queues, redis: this.producerRedis, config: this.config, owner: this.workerId,
      maxRetryFor: (source) => policyFor(source).maxRetryCount, history: new DeliveryHistory(this.pool), maxQueuedJobs: maxQueuedJobs(this.config), logger: this.logger, metrics: this.metrics,
    });
    this.reconciler.start();
  }

  async stop(): Promise<void> {
    await this.reconciler?.stop();
    const workers = this.workers;
    this.workers = [];
    await Promise.all(workers.map(async (worker) => {
      try {
        // close() waits for active sends; it has no timeout of its own and can hang (bullmq #2237, #4656).
        await withDeadline(worker.close(), Math.max(1000, this.config.shutdown_timeout - 1000), 'deliver worker close');
      } catch (err) {
        this.logger.warn({ err: (err as Error).message }, 'forcing deliver worker close; unfinished jobs return via stall detection and ledger lock expiry');
        await worker.close(true).catch(() => undefined);
      }
    }));
    this.client.close();
  }

  isRunning(): boolean {
    return this.workers.length > 0 && this.workers.every((worker) => worker.isRunning());
  }
}

/**
 * A BullMQ worker fetches jobs one round trip at a time and starts none of them until it holds `concurrency` jobs
 * or the queue is empty, so with concurrency 64 a poll's burst waited ~40 ms of sequential moveToActive calls before
 * its first send, and the oldest rows of the burst were sent with the last (bench, 500 ms poll at 150/s: p99
 * commit→send 566 ms with one worker, 526 ms with lanes of 8; capacity unchanged). Several workers in one process
 * fetch in parallel; each costs one blocking Redis connection, hence the cap.
 */
export const FETCH_LANE_SIZE = 8;
export const MAX_FETCH_LANES = 8;

/** The concurrency split into at most MAX_FETCH_LANES lanes of about FETCH_LANE_SIZE, as even as possible. */
export function fetchLanes(concurrency: number): number[] {
  const lanes = Math.min(MAX_FETCH_LANES, Math.ceil(concurrency / FETCH_LANE_SIZE));
  return Array.from({ length: lanes }, (_, i) => Math.floor(concurrency / lanes) + (i < concurrency % lanes ? 1 : 0));
}

/** The deliver queue's bound that ingest keeps (the largest max_queued_jobs; 0 means unbounded), for the reconciler. */
function maxQueuedJobs(config: NoticeConfig): number {
  const bounds = outboxNoticeModules(config).map((m) => m.worker.max_queued_jobs);
  return bounds.includes(0) ? Infinity : Math.max(...bounds);
}
