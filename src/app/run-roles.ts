import type { Logger } from 'pino';
import type { NoticeConfig } from '../config/schema.ts';
import { createMysqlPool } from '../platform/mysql.ts';
import { createRedis } from '../platform/redis.ts';
import { createDeliverQueue } from '../../queues/deliver-queue.ts';
import { IngestRole } from '../../ingest/ingest-role.ts';
import { DeliverRole } from '../../deliver/deliver-role.ts';
import { withDeadline, type Role } from './role.ts';

export type RoleName = 'ingest' | 'deliver';

/**
 * Builds the roles, starts them, and stops them on SIGTERM/SIGINT within `shutdown_timeout` — even if a client
 * library hangs, the process exits on time.
 */
export async function runRoles(config: NoticeConfig, roleNames: RoleName[], logger: Logger): Promise<void> {
  const pool = createMysqlPool(config.mysql.url, config.mysql.pool_size);
  const producerRedis = createRedis(config.redis.url, 'producer');
  const workerRedis = createRedis(config.redis.url, 'worker');
  const queue = createDeliverQueue(producerRedis, config.redis.prefix);
  queue.on('error', (err) => logger.warn({ err: err.message }, 'deliver queue connection error'));

  const closeConnections = async () => {
    await Promise.allSettled([queue.close(), pool.end()]);
    producerRedis.disconnect();
    workerRedis.disconnect();
  };

  let roles: Role[];
  try {
    roles = roleNames.map((name) => (name === 'ingest' ? new IngestRole(config, pool, queue, logger) : new DeliverRole(config, pool, workerRedis, logger)));
  } catch (err) {
    await closeConnections();
    throw err;
  }
  await warnOnUnsafeRedis(producerRedis, logger);
  for (const role of roles) await role.start();
  logger.info({ roles: roles.map((r) => r.name) }, 'notice-service started');

  await new Promise<void>((resolve) => {
    const onSignal = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      resolve();
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });

  const deadline = config.shutdown_timeout;
  const hardExit = setTimeout(() => {
    logger.error({ deadline_ms: deadline }, 'shutdown deadline passed; exiting anyway');
    process.exit(1);
  }, deadline);
  hardExit.unref();
  await Promise.allSettled(roles.map((r) => withDeadline(r.stop(), deadline, `${r.name} stop`)));
  await closeConnections();
  clearTimeout(hardExit);
  logger.info('notice-service stopped');
}

/** BullMQ keys evicted under memory pressure corrupt queues; only `noeviction` is safe. */
async function warnOnUnsafeRedis(redis: ReturnType<typeof createRedis>, logger: Logger): Promise<void> {
  try {
    const reply = (await redis.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply[1];
    if (policy && policy !== 'noeviction') {
      logger.warn({ maxmemory_policy: policy }, 'REDIS maxmemory-policy IS NOT noeviction: evicted BullMQ keys corrupt queues. Set maxmemory-policy noeviction.');
    }
  } catch {
    // CONFIG may be disabled on managed Redis; nothing to check then.
  }
}
