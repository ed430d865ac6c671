import ms from 'ms';
import { channelNames, channelQueueSpecs } from '../channels/registry.ts';
import type { NoticeConfig } from '../config/schema.ts';
import { createMysqlPool } from '../platform/mysql.ts';
import { createRedis } from '../platform/redis.ts';
import { LedgerQueries } from '../ledger/queries.ts';
import { sourcePolicy } from '../notices/sources.ts';
import { createDeliverQueues, type DeliverQueues } from '../../queues/deliver-queue.ts';
import { withTimelines } from '../ledger/present.ts';
import { DeliveryHistory } from '../ledger/history.ts';
import { runRequeue } from './requeue-run.ts';
import { AuditLog } from './audit-log.ts';
import { presentBody, RejectStore } from '../intake/reject-store.ts';
import { requeueRejected } from './reject-requeue.ts';
import { rejectEntries } from './reject-entries.ts';
// Log lines go to stderr, so stdout stays the command's JSON.
import { pino } from 'pino';
import { hostname, userInfo } from 'node:os';
import { RoleConfigError } from '../app/role.ts';

async function withResources<T>(
  config: NoticeConfig,
  work: (r: { pool: ReturnType<typeof createMysqlPool>; queues: DeliverQueues }) => Promise<T>,
): Promise<T> {
  const pool = createMysqlPool(config.mysql.url, 2);
  // Redis only for the commands that touch queues: `audit` and `rejects list/show` work with Redis down.
  let opened: { redis: ReturnType<typeof createRedis>; queues: DeliverQueues } | null = null;
  const resources = {
    pool,
    get queues(): DeliverQueues {
      if (!opened) {
        const redis = createRedis(config.redis.url, 'producer', { cluster: config.redis.cluster });
        opened = { redis, queues: createDeliverQueues(redis, config.redis.prefix, channelQueueSpecs(config)) };
      }
      return opened.queues;
    },
  };
  try {
    return await work(resources);
  } finally {
    const o = opened as { redis: ReturnType<typeof createRedis>; queues: DeliverQueues } | null;
    if (o) {
      await o.queues.close();
      o.redis.disconnect();
    }
    await pool.end();
  }
}

/** `notice-service inspect <event_id>`: every ledger row of the event, with its BullMQ job state. */
export async function inspectEvent(config: NoticeConfig, eventId: string): Promise<unknown[]> {
  return withResources(config, async ({ pool, queues }) => {
    const rows = await new LedgerQueries(pool).byEventId(eventId);
    const timelines = await withTimelines(new DeliveryHistory(pool), rows);
    return Promise.all(
      rows.map(async (row, i) => {
        const job = await queues.getJob(row);
        // One event asked for by id: the payload is shown here, never in lists.
        return {
          ...timelines[i]!,
          payload: row.payload,
          job: job ? { id: job.id, state: await job.getState(), attempts_made: job.attemptsMade, failed_reason: job.failedReason || null } : null,
        };
      }),
    );
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
  channel?: string;
  since?: string;
  dryRun: boolean;
}

/**
 * `notice-service requeue --status failed [--source …] [--channel …] [--since …] [--dry-run]`: the failed rows as
 * they stand when it starts, each taken once (runRequeue); progress on stderr.
 */
export async function requeueCommand(
  config: NoticeConfig,
  options: RequeueCommand,
): Promise<{ matched: number; requeued: number; skipped: Array<{ event_id: string; reason: string }>; dry_run: boolean }> {
  if (options.status !== 'failed') throw new RoleConfigError(`--status: only "failed" rows can be requeued, got "${options.status}"`);
  const names = channelNames(config);
  if (options.channel !== undefined && !names.includes(options.channel))
    throw new RoleConfigError(`--channel must be one of ${names.join(', ')}, got "${options.channel}"`);
  const sinceMs = options.since ? parseSince(options.since) : undefined;
  const policyFor = sourcePolicy(config);
  const detail = {
    status: options.status,
    ...(options.source ? { source: options.source } : {}),
    ...(options.channel ? { channel: options.channel } : {}),
    ...(options.since ? { since: options.since } : {}),
  };
  return withResources(config, async ({ pool, queues }) => {
    const result = await runRequeue(
      { pool, queues, maxRetryFor: (source) => policyFor(source).maxRetryCount },
      { actor: `${userInfo().username}@${hostname()}`, via: 'cli' },
      { filter: { sourceName: options.source, channel: options.channel, sinceMs }, detail },
      { dryRun: options.dryRun, onProgress: (p) => void process.stderr.write(`requeue: ${p.matched} matched, ${p.requeued} requeued, ${p.skipped} skipped\n`) },
    );
    return {
      matched: result.matched,
      requeued: result.requeued.length,
      skipped: result.skipped.map((s) => ({ event_id: s.key.sourceEventId, reason: s.reason })),
      dry_run: options.dryRun,
    };
  });
}

/** `notice-service rejects [--reason …] [--since …] [--limit n]`. */
export async function listRejectsCommand(config: NoticeConfig, options: { reason?: string; since?: string; limit: string }) {
  const limit = Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new RoleConfigError(`--limit must be an integer from 1 to 1000, got "${options.limit}"`);
  const sinceMs = options.since ? parseSince(options.since) : undefined;
  return withResources(config, async ({ pool }) => await new RejectStore(pool).list({ reason: options.reason, sinceMs, limit, offset: 0 }));
}

/** `notice-service rejects show <id>`: null when there is no such message. */
export async function showRejectCommand(config: NoticeConfig, idText: string) {
  const id = parseRejectId(idText);
  return withResources(config, async ({ pool }) => {
    const message = await new RejectStore(pool).get(id);
    if (!message) return null;
    const { rawBody, ...summary } = message;
    return { ...summary, body: presentBody(rawBody) };
  });
}

/** `notice-service rejects requeue <id…>`: through the same parser and recorder as the MQ entry; audited. */
export async function requeueRejectsCommand(config: NoticeConfig, idTexts: readonly string[]) {
  const ids = idTexts.map(parseRejectId);
  return withResources(config, async ({ pool, queues }) => {
    const result = await requeueRejected(
      {
        rejects: new RejectStore(pool),
        entryFor: rejectEntries(config, pool, queues, pino({ level: config.log.level, base: { role: 'cli' } }, pino.destination(2))),
      },
      ids,
    );
    await new AuditLog(pool).record({
      actor: `${userInfo().username}@${hostname()}`,
      via: 'cli',
      action: 'requeue_rejected',
      matched: ids.length - result.missing.length,
      affected: result.requeued.length,
      detail: { ids: ids.slice(0, 20), still_rejected: result.stillRejected.length, missing: result.missing.length },
    });
    return { requeued: result.requeued, still_rejected: result.stillRejected, missing: result.missing };
  });
}

function parseRejectId(text: string): number {
  const id = Number(text);
  if (!/^\d{1,15}$/.test(text) || !Number.isSafeInteger(id) || id <= 0) throw new RoleConfigError(`a rejected message id is a positive integer, got "${text}"`);
  return id;
}

/** `notice-service audit [--limit n]`: who did what to the pipeline, newest first. */
export async function auditCommand(config: NoticeConfig, limitText: string) {
  const limit = Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new RoleConfigError(`--limit must be an integer from 1 to 1000, got "${limitText}"`);
  return withResources(config, async ({ pool }) =>
    (await new AuditLog(pool).recent(limit)).map((a) => ({
      at: new Date(a.atMs).toISOString(),
      actor: a.actor,
      via: a.via,
      action: a.action,
      matched: a.matched,
      affected: a.affected,
      detail: a.detail,
    })),
  );
}
