import ms from 'ms';
import { prioritisedKinds, type NoticeConfig } from '../config/schema.ts';
import { createMysqlPool } from '../platform/mysql.ts';
import { createRedis } from '../platform/redis.ts';
import { LedgerQueries } from '../ledger/queries.ts';
import { LedgerRepository } from '../ledger/repository.ts';
import { sourcePolicy } from '../notices/registry.ts';
import { createDeliverQueues, type DeliverQueues } from '../../queues/deliver-queue.ts';
import { presentRow } from '../ledger/present.ts';
import { requeueFailed } from './requeue.ts';
import { AuditLog } from './audit-log.ts';
import { hostname, userInfo } from 'node:os';
import { RoleConfigError } from '../app/role.ts';

async function withResources<T>(config: NoticeConfig, work: (r: { pool: ReturnType<typeof createMysqlPool>; queues: DeliverQueues }) => Promise<T>): Promise<T> {
  const pool = createMysqlPool(config.mysql.url, 2);
  const redis = createRedis(config.redis.url, 'producer', { cluster: config.redis.cluster });
  const queues = createDeliverQueues(redis, config.redis.prefix, prioritisedKinds(config));
  try {
    return await work({ pool, queues });
  } finally {
    await queues.close();
    redis.disconnect();
    await pool.end();
  }
}

/** `notice-service inspect <event_id>`: every ledger row of the event, with its BullMQ job state. */
export async function inspectEvent(config: NoticeConfig, eventId: string): Promise<unknown[]> {
  return withResources(config, async ({ pool, queues }) => {
    const rows = await new LedgerQueries(pool).byEventId(eventId);
    return Promise.all(rows.map(async (row) => {
      const job = await queues.getJob(row);
      return { ...presentRow(row), job: job ? { id: job.id, state: await job.getState(), attempts_made: job.attemptsMade, failed_reason: job.failedReason || null } : null };
    }));
  });
}

/** `--since 1h` (relative) or `--since 2026-12-01T00:00:00Z` (absolute) → epoch ms. */
export function parseSince(value: string, nowMs = Date.now()): number {
  if (/^\d+(\.\d+)?\s*(ms|s|m|h|d)$/.test(value.trim())) return nowMs - ms(value.trim() as ms.StringValue);
  const absolute = Date.parse(value);
  if (Number.isNaN(absolute)) throw new RoleConfigError(`--since must be a duration like "2h" or an ISO time, got "${value}"`);
  return absolute;
}

export interface RequeueCommand {
  status: string;
  source?: string;
  since?: string;
  dryRun: boolean;
}

/** `notice-service requeue --status failed [--source …] [--since …] [--dry-run]`, in pages of 200. */
export async function requeueCommand(config: NoticeConfig, options: RequeueCommand): Promise<{ matched: number; requeued: number; skipped: Array<{ event_id: string; reason: string }>; dry_run: boolean }> {
  if (options.status !== 'failed') throw new RoleConfigError(`--status: only "failed" rows can be requeued, got "${options.status}"`);
  const sinceMs = options.since ? parseSince(options.since) : undefined;
  const policyFor = sourcePolicy(config);
  return withResources(config, async ({ pool, queues }) => {
    const queries = new LedgerQueries(pool);
    const ledger = new LedgerRepository(pool);
    let matched = 0;
    let requeued = 0;
    const skipped: Array<{ event_id: string; reason: string }> = [];
    let offset = 0;
    for (;;) {
      // Requeued rows leave the failed set, so the next page starts at the skipped ones.
      const { rows } = await queries.byStatus('failed', { limit: 200, offset, sourceName: options.source, sinceMs });
      if (rows.length === 0) break;
      matched += rows.length;
      if (options.dryRun) {
        offset += rows.length;
        continue;
      }
      const result = await requeueFailed(ledger, queues, rows, (source) => policyFor(source).maxRetryCount);
      requeued += result.requeued.length;
      skipped.push(...result.skipped.map((s) => ({ event_id: s.key.sourceEventId, reason: s.reason })));
      offset += result.skipped.length;
    }
    // A dry run changes nothing, so it is not an action on the pipeline.
    if (!options.dryRun) {
      await new AuditLog(pool).record({
        actor: `${userInfo().username}@${hostname()}`, via: 'cli', action: 'requeue_failed', matched, affected: requeued,
        detail: { status: options.status, ...(options.source ? { source: options.source } : {}), ...(options.since ? { since: options.since } : {}), skipped: skipped.length },
      });
    }
    return { matched, requeued, skipped, dry_run: options.dryRun };
  });
}
