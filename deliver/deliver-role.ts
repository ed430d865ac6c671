import { Revoker } from '../src/revoke/revoker.ts';
import { RevocationStore } from '../src/revoke/store.ts';
import { Worker } from 'bullmq';
import pLimit from 'p-limit';
import type { Redis } from 'ioredis';
import type { Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import type { NoticeConfig } from '../src/config/schema.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { outboxNoticeModules, sourcePolicy } from '../src/notices/sources.ts';
import { RoleConfigError, type Role } from '../src/app/role.ts';
import { withDeadline } from '../src/platform/deadline.ts';
import { newWorkerId } from '../src/app/worker-id.ts';
import type { DeliverJobData, DeliverQueues } from '../queues/deliver-queue.ts';
import { LegacyQueueLayout } from '../queues/legacy-layout.ts';
import { repeatedErrors } from '../src/platform/repeated-errors.ts';
import { createDeliverProcessor, ledgerBackoff } from './processor.ts';
import type { NoticeMetrics } from '../src/observability/metrics.ts';
import { Reconciler } from '../src/delivery/reconciler.ts';
import { BatchedLedger } from '../src/ledger/batched-ledger.ts';
import { RejectStore } from '../src/intake/reject-store.ts';
import { DeliveryHistory } from '../src/ledger/history.ts';
import { channelModule, channelModules } from '../src/channels/channel-set.ts';
import type { ChannelModule } from '../src/channels/types.ts';
import { routedChannels } from '../src/channels/routing.ts';
import type { DeliveryChannel } from '../src/channels/types.ts';
import type { DeliveryOutcome, DeliveryPorts } from '../src/delivery/deliver-once.ts';
import { channelLedger, deliveryLedger } from '../src/delivery/ledger-port.ts';
import { UserSettingsLookup } from '../src/delivery/user-settings.ts';
import { DigestStore } from '../src/digests/store.ts';
import { withDecisions } from '../src/delivery/wrappers/decisions.ts';
import { channelRoutes } from '../src/channels/routing.ts';
import { describeError } from '../src/platform/errors.ts';

/**
 * Why this config cannot deliver: a channel some notice kind is routed to has no sender. Checked before anything
 * starts, so a deliver process never runs while routed notices would pile up unsent.
 */
export function channelRegistryProblems(config: NoticeConfig): string[] {
  return routedChannels(config).flatMap((name) => {
    const problem = channelModule(config, name)?.senderProblem(config);
    return problem ? [`channel ${name}: ${problem}`] : [];
  });
}

/** Deliver: BullMQ workers on every routed channel's queues, sending through the channel and recording outcomes in the ledger. */
export class DeliverRole implements Role {
  readonly name = 'deliver';
  readonly workerId = newWorkerId('deliver');
  readonly outcomes: Record<DeliveryOutcome, number> = {
    delivered: 0,
    delivered_unconfirmed: 0,
    retryable: 0,
    failed: 0,
    rate_limited: 0,
    superseded: 0,
    suppressed: 0,
    skipped_read: 0,
    digested: 0,
    expired: 0,
  };
  private workers: Array<Worker<DeliverJobData>> = [];
  private channels: DeliveryChannel[] = [];
  private readonly maintenance = new Map<string, NodeJS.Timeout>();
  reconciler: Reconciler | null = null;
  private readonly modules: ChannelModule[];

  constructor(
    private readonly config: NoticeConfig,
    private readonly pool: Pool,
    private readonly connection: Redis,
    private readonly queues: DeliverQueues,
    private readonly producerRedis: Redis,
    private readonly logger: Logger,
    private readonly metrics?: NoticeMetrics,
  ) {
    const problems = channelRegistryProblems(config);
    if (problems.length > 0) throw new RoleConfigError(`deliver refuses to start: ${problems.join('; ')}`);
    this.modules = routedChannels(config).map((name) => channelModule(config, name)!);
    if (this.modules.length === 0)
      throw new RoleConfigError(
        `deliver refuses to start: no notice kind is routed to any channel; as configured each takes none (${channelModules(config)
          .map((m) => `${m.name}: ${m.configKey}.enabled, ${m.configKey}.kinds`)
          .join('; ')}): turn one on`,
      );
  }

  async start(): Promise<void> {
    const policyFor = sourcePolicy(this.config);
    const ledger = new LedgerRepository(this.pool);
    const hot = new BatchedLedger(this.pool, this.workerId, (source) => policyFor(source).lockTtlMs);
    const history = new DeliveryHistory(this.pool, (err) =>
      this.logger.warn({ err: err.message }, 'could not write delivery history; the ledger row is unaffected'),
    );
    const ports = new Map<string, DeliveryPorts>();
    const routes = channelRoutes(this.config);
    const port = deliveryLedger(hot, ledger, this.workerId);
    // One read for every channel: a claim batch's preferences and quiet hours are one statement.
    const settings = new UserSettingsLookup(this.pool, { preferences: this.config.preferences.enabled, quietHours: this.config.quiet_hours.enabled });
    // The read states of the channel users read (the inbox), for escalation; none registered: every item counts unread.
    const reader = channelModules(this.config).find((m) => m.readStates);
    const readStates = reader ? await reader.readStates!(this.pool) : { stateOf: async () => 'not_yet' as const };
    const digests = new DigestStore(this.pool);
    for (const module of this.modules) {
      const sender = await module.create({
        config: this.config,
        pool: this.pool,
        redis: this.connection,
        ledger: channelLedger(ledger),
        routes,
        logger: this.logger,
        metrics: this.metrics,
      });
      // The decisions around every send, in the order src/delivery/wrappers/decisions.ts declares.
      const channel = withDecisions(sender, {
        config: this.config,
        module,
        settingsOf: (appCode, userId) => settings.get(appCode, userId),
        readStates,
        digests,
        newerVersion: (row) => hot.newerVersion(row),
      });
      this.channels.push(channel);
      ports.set(module.name, {
        ledger: port,
        channel,
        workerId: this.workerId,
        maxRetryCount: (source) => policyFor(source).maxRetryCount,
        retryBaseMs: this.config.deliver.retry_base_delay,
        retryMaxMs: this.config.deliver.retry_max_delay,
        documentedErrorCode: module.documentedErrorCode,
        maxUnfinishedAttempts: this.config.deliver.max_unfinished_attempts,
        servesApp: (appCode) => Object.hasOwn(this.config.apps, appCode),
        logger: this.logger,
        metrics: this.metrics,
        history: (entry) => void history.append(entry),
        onOutcome: (outcome) => this.outcomes[outcome]++,
      });
    }
    const queueByName = new Map(this.queues.all.map((queue) => [queue.name, queue]));
    // Each queue's workers share its channel's concurrency in lanes; its batch rows share the same number of slots.
    const rowLimits = new Map(
      this.modules.flatMap((module) => this.queues.ofChannel(module.name).map((q) => [q.name, pLimit(module.concurrency(this.config))] as const)),
    );
    const processor = createDeliverProcessor({
      portsFor: (channel) => ports.get(channel),
      queueNamed: (name) => queueByName.get(name),
      rowLimit: (queueName) => rowLimits.get(queueName) ?? pLimit(1),
      rowStatus: async (key) => (await ledger.get(key))?.status ?? null,
      retryBaseMs: this.config.deliver.retry_base_delay,
      retryMaxMs: this.config.deliver.retry_max_delay,
      logger: this.logger,
      metrics: this.metrics,
    });
    await this.startWorkers(processor);
    for (const channel of this.channels) this.scheduleMaintenance(channel);
    this.reconciler = new Reconciler({
      ledger,
      queues: this.queues,
      redis: this.producerRedis,
      config: this.config,
      owner: this.workerId,
      maxRetryFor: (source) => policyFor(source).maxRetryCount,
      history: new DeliveryHistory(this.pool),
      rejects: new RejectStore(this.pool),
      maxQueuedJobs: maxQueuedJobs(this.config),
      legacy: new LegacyQueueLayout(
        this.producerRedis,
        this.config.redis.prefix,
        this.queues,
        repeatedErrors(this.logger, 'old-layout queue connection error'),
      ),
      revoker: new Revoker({
        revocations: new RevocationStore(this.pool),
        ledger,
        channels: new Map(this.channels.map((c) => [c.name, c])),
        logger: this.logger,
      }),
      logger: this.logger,
      metrics: this.metrics,
    });
    this.reconciler.start();
  }

  /**
   * Several BullMQ workers share a channel's concurrency (see fetchLanes): a burst starts sending after a few
   * fetches. Each queue has its own lanes, so a kind's jobs are claimed while another kind's backlog waits; the
   * C2C pacer then hands out the quota by priority among everything claimed.
   */
  private async startWorkers(processor: ReturnType<typeof createDeliverProcessor>): Promise<void> {
    // Every worker reports each reconnect attempt of an outage: one line per 10 s for all of them, with a count.
    const workerErrors = repeatedErrors(this.logger, 'deliver worker error');
    this.workers = this.modules.flatMap((module) => {
      // Each app with a tag of its own has its own queues; the lanes are shared out so the Redis connections stay bounded.
      const groups = this.queues.groupsOfChannel(module.name);
      const laneSizes = fetchLanes(module.concurrency(this.config), Math.max(1, Math.floor(MAX_FETCH_LANES / groups.length)));
      return groups.flat().flatMap((queue) =>
        laneSizes.map(
          (concurrency) =>
            new Worker<DeliverJobData>(queue.name, processor, {
              connection: this.connection,
              prefix: queue.opts.prefix,
              concurrency,
              settings: { backoffStrategy: ledgerBackoff(this.config.deliver.retry_base_delay, this.config.deliver.retry_max_delay) },
              // The job lock outlasts the channel's longest send (its own timeouts: two HTTP calls for a re-sign).
              lockDuration: Math.max(this.config.deliver.job_lock_duration, module.longestSendMs(this.config)),
              stalledInterval: this.config.deliver.job_lock_duration,
              maxStalledCount: 3,
              autorun: false,
            }),
        ),
      );
    });
    for (const worker of this.workers) {
      worker.on('error', workerErrors);
      void worker.run();
    }
    await Promise.all(this.workers.map((worker) => worker.waitUntilReady()));
  }

  /** A channel's own upkeep (the inbox's retention and caps), one run at a time, on its interval, until stop. */
  private scheduleMaintenance(channel: DeliveryChannel): void {
    const { maintain, maintainEveryMs } = channel;
    if (!maintain || !maintainEveryMs) return;
    const run = () => {
      void maintain(Date.now())
        .catch((err) => this.logger.warn({ channel: channel.name, err: describeError(err) }, 'channel maintenance failed; it runs again'))
        .finally(() => {
          if (this.maintenance.has(channel.name)) this.maintenance.set(channel.name, setTimeout(run, maintainEveryMs));
        });
    };
    this.maintenance.set(channel.name, setTimeout(run, maintainEveryMs));
  }

  async stop(): Promise<void> {
    for (const timer of this.maintenance.values()) clearTimeout(timer);
    this.maintenance.clear();
    await this.reconciler?.stop();
    const workers = this.workers;
    this.workers = [];
    await Promise.all(
      workers.map(async (worker) => {
        try {
          // close() waits for active sends; it has no timeout of its own and can hang (bullmq #2237, #4656).
          await withDeadline(worker.close(), Math.max(1000, this.config.shutdown_timeout - 1000), 'deliver worker close');
        } catch (err) {
          this.logger.warn({ err: (err as Error).message }, 'forcing deliver worker close; unfinished jobs return via stall detection and ledger lock expiry');
          await worker.close(true).catch(() => undefined);
        }
      }),
    );
    for (const channel of this.channels) await channel.close?.();
    this.channels = [];
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
export function fetchLanes(concurrency: number, maxLanes = MAX_FETCH_LANES): number[] {
  const lanes = Math.min(maxLanes, Math.ceil(concurrency / FETCH_LANE_SIZE));
  return Array.from({ length: lanes }, (_, i) => Math.floor(concurrency / lanes) + (i < concurrency % lanes ? 1 : 0));
}

/** The deliver queue's bound that ingest keeps (the largest max_queued_jobs; 0 means unbounded), for the reconciler. */
function maxQueuedJobs(config: NoticeConfig): number {
  const bounds = outboxNoticeModules(config).map((m) => m.worker.max_queued_jobs);
  return bounds.includes(0) ? Infinity : Math.max(...bounds);
}
