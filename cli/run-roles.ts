import type { Logger } from 'pino';
import { channelQueueSpecs, channelRoles } from '../src/channels/channel-set.ts';
import type { NoticeConfig } from '../src/config/schema.ts';
import { createMysqlPool, type Pool } from '../src/platform/mysql.ts';
import { createRedis, type Redis } from '../src/platform/redis.ts';
import { repeatedErrors } from '../src/platform/repeated-errors.ts';
import { createDeliverQueues, type DeliverQueues } from '../queues/deliver-queue.ts';
import type { IngestRole } from '../ingest/ingest-role.ts';
import type { DeliverRole } from '../deliver/deliver-role.ts';
import type { DashboardRole } from '../dashboard/dashboard-role.ts';
import type { Role } from '../src/app/role.ts';
import { withDeadline } from '../src/platform/deadline.ts';
import { configDeprecations } from '../src/composition/load.ts';
import { readinessCheck } from '../src/observability/readiness.ts';
import { NoticeMetrics } from '../src/observability/metrics.ts';
import { HealthServer, type Readiness } from '../src/observability/health-server.ts';

/** ingest, deliver, dashboard, or a role a channel module serves (inbox-api). */
export type RoleName = string;
const CORE_ROLES = ['ingest', 'deliver', 'dashboard'];

/**
 * The connections and roles of one process, built from config; used by the CLI and by in-process tests. This is the
 * executable's composition root, so it lives with the CLI entry: the core under src/ never imports the process folders.
 */
export interface NoticeProcess {
  pool: Pool;
  queues: DeliverQueues;
  roles: Role[];
  ingest?: IngestRole;
  deliver?: DeliverRole;
  dashboard?: DashboardRole;
  /** Roles channel modules serve (the inbox API). */
  channelRoles: Role[];
  metrics: NoticeMetrics;
  health: HealthServer;
  readiness(): Promise<Readiness>;
  start(): Promise<void>;
  /** Stops every role within `shutdown_timeout`, then closes connections. */
  stop(): Promise<void>;
}

export async function buildProcess(
  config: NoticeConfig,
  roleNames: readonly RoleName[],
  logger: Logger,
  metrics = new NoticeMetrics(),
): Promise<NoticeProcess> {
  const served = channelRoles(config);
  const unknown = roleNames.filter((r) => !CORE_ROLES.includes(r) && !served.some((s) => s.name === r));
  if (unknown.length > 0) throw new Error(`unknown role ${unknown.join(', ')} (roles: ${[...CORE_ROLES, ...served.map((s) => s.name)].join(', ')})`);
  // A channel's own role (the inbox API, the one the gateway reaches) touches no queue: no Redis connection or credential.
  const needsRedis = roleNames.some((r) => CORE_ROLES.includes(r));
  const pool = createMysqlPool(config.mysql.url, needsRedis ? config.mysql.pool_size : 1);
  const redis = needsRedis
    ? {
        producer: createRedis(config.redis.url, 'producer', { cluster: config.redis.cluster }),
        worker: createRedis(config.redis.url, 'worker', { cluster: config.redis.cluster }),
      }
    : null;
  const deliverQueues = redis ? createDeliverQueues(redis.producer, config.redis.prefix, channelQueueSpecs(config)) : null;
  deliverQueues?.on('error', repeatedErrors(logger, 'deliver queue connection error'));
  // A connection no role uses here (the worker one in a dashboard-only process) would print ioredis's "Unhandled
  // error event" with a stack at every reconnect attempt.
  redis?.worker.on('error', repeatedErrors(logger, 'Redis connection error'));
  const queuesOrThrow = (): DeliverQueues => {
    if (!deliverQueues) throw new Error('this process runs only inbox-api, which uses no deliver queue');
    return deliverQueues;
  };

  const closeConnections = async () => {
    await Promise.allSettled([deliverQueues?.close(), pool.end()]);
    redis?.producer.disconnect();
    redis?.worker.disconnect();
  };

  let ingest: IngestRole | undefined;
  let deliver: DeliverRole | undefined;
  let dashboard: DashboardRole | undefined;
  const extra: Role[] = [];
  // Each role's module (and its libraries: the RocketMQ client, express and bull-board) loads only where it runs.
  try {
    if (roleNames.includes('ingest')) ingest = new (await import('../ingest/ingest-role.ts')).IngestRole(config, pool, queuesOrThrow(), logger, metrics);
    if (roleNames.includes('deliver'))
      deliver = new (await import('../deliver/deliver-role.ts')).DeliverRole(config, pool, redis!.worker, queuesOrThrow(), redis!.producer, logger, metrics);
    if (roleNames.includes('dashboard')) dashboard = new (await import('../dashboard/dashboard-role.ts')).DashboardRole(config, pool, queuesOrThrow(), logger);
    for (const role of served) if (roleNames.includes(role.name)) extra.push(await role.create(config, logger, metrics));
  } catch (err) {
    await closeConnections();
    throw err;
  }
  const roles: Role[] = [...[ingest, deliver, dashboard].filter((r): r is IngestRole | DeliverRole | DashboardRole => r !== undefined), ...extra];

  metrics.onScrape('queue_jobs', async () => {
    await Promise.all(
      (deliverQueues?.all ?? []).map(async (queue) => {
        const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'failed', 'completed', 'prioritized');
        for (const [state, n] of Object.entries(counts)) metrics.queueJobs.set({ queue: queue.name, state }, n);
      }),
    );
  });
  const readiness = readinessCheck(pool, redis?.producer ?? null, roles, logger);
  metrics.onScrape('readiness', async () => {
    metrics.ready.set((await readiness()).ready ? 1 : 0);
  });
  const health = new HealthServer({
    host: config.health.host,
    httpPort: config.health.http_port,
    grpcPort: config.health.grpc_port,
    metrics,
    readiness,
    logger,
  });

  return {
    pool,
    get queues() {
      return queuesOrThrow();
    },
    roles,
    ingest,
    deliver,
    dashboard,
    channelRoles: extra,
    metrics,
    health,
    readiness,
    async start() {
      if (redis) await warnOnUnsafeRedis(redis.producer, logger);
      for (const note of configDeprecations(config)) logger.warn({ deprecated: note }, 'config keys read from their old place');
      for (const role of roles) await role.start();
      await health.start();
      logger.info(
        { roles: roles.map((r) => r.name), http_port: health.httpPort || undefined, grpc_port: health.grpcPort || undefined },
        'notice-service started',
      );
    },
    async stop() {
      health.markShuttingDown();
      const deadline = config.shutdown_timeout;
      await Promise.allSettled(roles.map((r) => withDeadline(r.stop(), deadline, `${r.name} stop`)));
      await health.stop();
      await closeConnections();
    },
  };
}

/** CLI entry: run until SIGTERM/SIGINT, then stop within the deadline even if a client library hangs. */
export async function runRoles(config: NoticeConfig, roleNames: readonly RoleName[], logger: Logger): Promise<void> {
  const proc = await buildProcess(config, roleNames, logger);
  await proc.start();
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  const hardExit = setTimeout(() => {
    logger.error({ deadline_ms: config.shutdown_timeout }, 'shutdown deadline passed; exiting anyway');
    process.exit(1);
  }, config.shutdown_timeout + 1000);
  hardExit.unref();
  await proc.stop();
  clearTimeout(hardExit);
  logger.info('notice-service stopped');
  // Everything this process owns is stopped; a handle a library left open (a BullMQ blocking connection still
  // reconnecting after a force-close, seen after a Redis restart) must not keep it alive and holding its port.
  process.exit(0);
}

/** BullMQ keys evicted under memory pressure corrupt queues; only `noeviction` is safe. */
async function warnOnUnsafeRedis(redis: Redis, logger: Logger): Promise<void> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1];
    if (policy && policy !== 'noeviction') {
      logger.warn(
        { maxmemory_policy: policy },
        'REDIS maxmemory-policy IS NOT noeviction: evicted BullMQ keys corrupt queues. Set maxmemory-policy noeviction.',
      );
    }
  } catch {
    // CONFIG may be disabled on managed Redis; nothing to check then.
  }
}
