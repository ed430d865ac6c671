import type { Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import { PROXY_MAX_AWAIT_MS, PROXY_MIN_INVISIBLE_MS, type NoticeConfig } from '../src/config/schema.ts';
import { RevocationStore } from '../src/revoke/store.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { GapWatchStore } from '../src/outbox/gap-watch-store.ts';
import { CursorStore } from '../src/outbox/cursor-store.ts';
import { OutboxPoller } from '../src/outbox/poller.ts';
import { OutboxReader } from '../src/outbox/reader.ts';
import { createMysqlPool } from '../src/platform/mysql.ts';
import { FactRecorder } from '../src/intake/fact-recorder.ts';
import { RejectStore } from '../src/intake/reject-store.ts';
import { MqConsumerLoop } from '../src/rocketmq/consumer-loop.ts';
import { ingestEnabled, ingestSwitches, mqNoticeModules, outboxNoticeModules } from '../src/notices/sources.ts';
import { RoleConfigError, type Role } from '../src/app/role.ts';
import { newWorkerId } from '../src/app/worker-id.ts';
import { channelRoutes } from '../src/channels/routing.ts';
import { enqueueDeliveries, planBatches, type DeliverQueues } from '../queues/deliver-queue.ts';
import type { NoticeMetrics } from '../src/observability/metrics.ts';

/** Ingest: one poller per enabled outbox source and one consumer per enabled MQ subscription, all writing the ledger and the deliver queue. */
export class IngestRole implements Role {
  readonly name = 'ingest';
  readonly pollers: OutboxPoller[];
  readonly consumers: MqConsumerLoop[];
  private running = false;
  private readonly ownerPools = new Map<string, Pool>();

  constructor(config: NoticeConfig, pool: Pool, queues: DeliverQueues, logger: Logger, metrics?: NoticeMetrics) {
    if (!ingestEnabled(config)) {
      throw new RoleConfigError(`ingest has no source enabled: set ${ingestSwitches(config).join(', or ')}`);
    }
    const ledger = new LedgerRepository(pool);
    const revocations = new RevocationStore(pool);
    const cursors = new CursorStore(pool);
    const gapWatch = new GapWatchStore(pool);
    const owner = newWorkerId('ingest');
    const routes = channelRoutes(config);
    const recorderFor = (maxRetryCount: number) =>
      new FactRecorder(
        ledger,
        (items) =>
          enqueueDeliveries(
            queues,
            items.map((i) => ({ key: i.key, eventType: i.eventType, noticeKind: i.noticeKind, userId: i.userId, batchJobId: i.batchJobId, maxRetryCount })),
          ),
        routes,
        logger,
        metrics,
        Date.now,
        revocations,
        (items) => planBatches(queues, items, config.deliver.rows_per_job),
      );

    // An owner outbox on another server is read through a pool of its own (its read-only user); cursors, gaps and
    // the ledger stay in notice-service's database.
    const poolFor = (url: string) => {
      if (url === config.mysql.url) return pool;
      let own = this.ownerPools.get(url);
      if (!own) this.ownerPools.set(url, (own = createMysqlPool(url, 2)));
      return own;
    };
    // Each poller's backpressure counts only its own kinds' queues: a wallet backlog must not hold back kicks.
    this.pollers = outboxNoticeModules(config)
      .filter((m) => m.worker.enabled)
      .flatMap((m) =>
        m.shards.map((shard) => {
          const source = { ...m.source, database: shard.database };
          return new OutboxPoller({
            source,
            name: shard.name === null ? m.source.sourceName : `${m.source.sourceName}:${shard.name}`,
            config: m.worker,
            reader: new OutboxReader(poolFor(shard.mysqlUrl), source),
            cursors,
            gapWatch,
            recorder: recorderFor(m.worker.max_retry_count),
            owner,
            logger: shard.name === null ? logger : logger.child({ shard: shard.name }),
            metrics,
            queueDepth: () => queues.queuedJobsByGroup(m.noticeKinds),
            appGroupOf: (app) => queues.appGroupOf(app),
            recordedAtRows: (sourceName, rows) => ledger.recordedAtRows(sourceName, rows),
          });
        }),
      );

    const mq = config.rocketmq;
    const rejects = new RejectStore(pool);
    this.consumers = (mq.enabled ? mqNoticeModules(config) : [])
      .filter((m) => m.subscription.enabled)
      .map((m) => {
        const sub = m.subscription;
        if (sub.invisible_duration < PROXY_MIN_INVISIBLE_MS || sub.await_duration > PROXY_MAX_AWAIT_MS) {
          logger.warn(
            { key: m.configKey, invisible_duration_ms: sub.invisible_duration, await_duration_ms: sub.await_duration },
            'a real RocketMQ proxy rejects invisible_duration < 10s and caps await_duration at 20s',
          );
        }
        return new MqConsumerLoop({
          sourceName: m.sourceName,
          // The RocketMQ client (and its gRPC stack) loads only in processes that consume MQ.
          createReceiver: async () =>
            new (await import('../src/rocketmq/receiver.ts')).RocketMqReceiver(
              {
                endpoints: mq.endpoints,
                namespace: mq.namespace,
                accessKey: mq.access_key,
                secretKey: mq.secret_key,
                ssl: mq.ssl,
                requestTimeoutMs: mq.request_timeout,
                startupTimeoutMs: mq.startup_timeout,
                topic: sub.topic,
                consumerGroup: sub.consumer_group,
                awaitDurationMs: sub.await_duration,
              },
              logger,
            ),
          parse: m.parse,
          recorder: recorderFor(m.maxRetryCount),
          rejects,
          batchSize: sub.receive_batch_size,
          invisibleMs: sub.invisible_duration,
          maxReconsumeTimes: sub.consumer_max_reconsume_times,
          logger,
          metrics,
        });
      });
  }

  async start(): Promise<void> {
    for (const poller of this.pollers) poller.start();
    for (const consumer of this.consumers) consumer.start();
    this.running = true;
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all([...this.pollers.map((p) => p.stop()), ...this.consumers.map((c) => c.stop())]);
    await Promise.allSettled([...this.ownerPools.values()].map((p) => p.end()));
  }

  health(): Record<string, string> {
    return Object.fromEntries(this.pollers.map((p) => [`source:${p.sourceName}`, p.health()]));
  }

  isRunning(): boolean {
    return this.running && this.pollers.every((p) => p.isRunning) && this.consumers.every((c) => c.isRunning);
  }
}
