import { channelNames, channelQueueSpecs } from '../channels/channel-set.ts';
import type { NoticeConfig } from '../config/schema.ts';
import { createMysqlPool } from '../platform/mysql.ts';
import { createRedis } from '../platform/redis.ts';
import { LedgerQueries } from '../ledger/queries.ts';
import { isFinalForDelivery } from '../ledger/transitions.ts';
import { sourceModules, sourcePolicy } from '../notices/sources.ts';
import { createDeliverQueues, type DeliverQueues } from '../../queues/deliver-queue.ts';
import { withTimelines } from '../ledger/present.ts';
import { DeliveryHistory } from '../ledger/history.ts';
import { runRequeue } from './requeue-run.ts';
import { AuditLog, presentAction } from './audit-log.ts';
import { RevocationStore } from '../revoke/store.ts';
import type { RowDataPacket } from 'mysql2/promise';
import { presentBody, RejectStore } from '../intake/reject-store.ts';
import { requeueRejected } from './reject-requeue.ts';
import { rejectEntries } from './reject-entries.ts';
// Log lines go to stderr, so stdout stays the command's JSON.
import { pino } from 'pino';
import { hostname, userInfo } from 'node:os';
import { RoleConfigError } from '../app/role.ts';
import { withDeadline } from '../platform/deadline.ts';
import { keyProblem } from '../intake/fact-validation.ts';
import { timelinePage } from '../ledger/timeline.ts';
import { presentFact } from '../ledger/present-fact.ts';
import { DELIVERY_STATUSES } from '../ledger/status.ts';
import { serverProblem, UnreachableError } from './server-errors.ts';
import { formatTime } from '../platform/clock.ts';

export { UnreachableError } from './server-errors.ts';

const REACH_MS = 3000;

interface Resources {
  pool: ReturnType<typeof createMysqlPool>;
  /** The deliver queues; throws UnreachableError when Redis does not answer within 3 s. */
  queues(): Promise<DeliverQueues>;
  /** The queues, or null when Redis does not answer (commands that can say what they know without it). */
  queuesIfReachable(): Promise<DeliverQueues | null>;
}

/**
 * MySQL (checked at once, 3 s) and, only for commands that touch queues, Redis (checked when first asked, 3 s): a
 * server that is down is one line naming it, never a hang or a stack trace.
 */
export async function withResources<T>(config: NoticeConfig, work: (r: Resources) => Promise<T>): Promise<T> {
  const pool = createMysqlPool(config.mysql.url, 2, { connectTimeout: REACH_MS });
  let opened: { redis: ReturnType<typeof createRedis>; queues: DeliverQueues } | null = null;
  let redisDown: string | null = null;
  const open = async (): Promise<DeliverQueues | null> => {
    if (opened) return opened.queues;
    if (redisDown) return null;
    const redis = createRedis(config.redis.url, 'producer', { cluster: config.redis.cluster });
    // The ping fails with ioredis's retry-limit message; the connection error before it says why.
    let connectionError: unknown;
    redis.on('error', (err) => (connectionError = err));
    try {
      await withDeadline(redis.ping(), REACH_MS, 'Redis ping');
    } catch (err) {
      redis.disconnect();
      redisDown = serverProblem('Redis', config.redis.url, connectionError ?? err);
      return null;
    }
    opened = { redis, queues: createDeliverQueues(redis, config.redis.prefix, channelQueueSpecs(config)) };
    return opened.queues;
  };
  try {
    try {
      await withDeadline(pool.query('SELECT 1'), REACH_MS + 500, 'MySQL');
    } catch (err) {
      throw new UnreachableError(serverProblem('MySQL', config.mysql.url, err));
    }
    return await work({
      pool,
      queuesIfReachable: open,
      async queues() {
        const queues = await open();
        if (!queues) throw new UnreachableError(`${redisDown}; this command needs it`);
        return queues;
      },
    });
  } finally {
    const o = opened as { redis: ReturnType<typeof createRedis>; queues: DeliverQueues } | null;
    if (o) {
      await o.queues.close();
      o.redis.disconnect();
    }
    await pool.end().catch(() => undefined);
  }
}

/** `notice-service inspect <event_id>`: every ledger row of the event, with its BullMQ job state. */
export async function inspectEvent(config: NoticeConfig, eventId: string): Promise<unknown[]> {
  return withResources(config, async ({ pool, queuesIfReachable }) => {
    const rows = await new LedgerQueries(pool).byEventId(eventId);
    const queues = rows.length > 0 ? await queuesIfReachable() : null;
    const timelines = await withTimelines(new DeliveryHistory(pool), rows);
    return Promise.all(
      rows.map(async (row, i) => {
        if (!queues) return { ...timelines[i]!, payload: row.payload, job: 'unknown: Redis is unreachable' };
        // A row's own job (retries, waits, dead letters), else the batch job carrying its first attempt.
        const job = (await queues.getJob(row)) ?? (await queues.getBatchJob(row));
        // One event asked for by id: the payload is shown here, never in lists.
        return {
          ...timelines[i]!,
          payload: row.payload,
          job: job
            ? { id: job.id, state: await job.getState(), attempts_made: job.attemptsMade, failed_reason: job.failedReason || null }
            : isFinalForDelivery(row.status)
              ? 'none: a completed job is removed as it completes; the ledger row is the record'
              : null,
        };
      }),
    );
  });
}

export { parseSince } from './since.ts';
import { parseSince } from './since.ts';

export interface RequeueCommand {
  status: string;
  source?: string;
  channel?: string;
  since?: string;
  until?: string;
  user?: string;
  code?: string;
  kind?: string;
  app?: string;
  dryRun: boolean;
  /** Called with the number of rows the run would take, before it changes anything; false stops it (nothing changed). */
  confirm?: (matched: number) => Promise<boolean>;
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
  oneOf('--channel', options.channel, names);
  oneOf(
    '--source',
    options.source,
    sourceModules(config).map((m) => m.sourceName),
  );
  oneOf('--kind', options.kind, noticeKindsOf(config));
  const filter = {
    sourceName: options.source,
    channel: options.channel,
    sinceMs: options.since ? parseSince(options.since) : undefined,
    untilMs: options.until ? parseSince(options.until, Date.now(), '--until') : undefined,
    userId: options.user,
    errorCode: options.code,
    noticeKind: options.kind,
    appCode: options.app,
  };
  const policyFor = sourcePolicy(config);
  const detail = {
    status: options.status,
    ...(options.source ? { source: options.source } : {}),
    ...(options.channel ? { channel: options.channel } : {}),
    ...(options.since ? { since: options.since } : {}),
    ...(options.until ? { until: options.until } : {}),
    ...(options.user ? { user: options.user } : {}),
    ...(options.code ? { code: options.code } : {}),
    ...(options.kind ? { kind: options.kind } : {}),
    ...(options.app ? { app: options.app } : {}),
  };
  return withResources(config, async ({ pool, queues: needQueues }) => {
    // A dry run only counts rows in MySQL: it works with Redis down (a real one checks Redis before asking).
    const queues = options.dryRun ? null : await needQueues();
    const deps = { pool, queues, maxRetryFor: (source: string) => policyFor(source).maxRetryCount };
    const who = { actor: `${userInfo().username}@${hostname()}`, via: 'cli' as const };
    if (!options.dryRun && options.confirm) {
      // The count first (a dry run changes nothing but is audited as one), then the operator's yes.
      const count = await runRequeue(deps, who, { filter, detail: { ...detail, confirmation: 'asked' } }, { dryRun: true });
      if (!(await options.confirm(count.matched))) return { matched: count.matched, requeued: 0, skipped: [], dry_run: true };
    }
    const result = await runRequeue(
      { pool, queues, maxRetryFor: (source) => policyFor(source).maxRetryCount },
      { actor: `${userInfo().username}@${hostname()}`, via: 'cli' },
      { filter, detail },
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
  return withResources(config, async ({ pool }) => {
    const listed = await new RejectStore(pool).list({ reason: options.reason, sinceMs, limit, offset: 0 });
    // One clock: the received time in display.time_zone, labelled, beside the epoch milliseconds.
    return { ...listed, rows: listed.rows.map((r) => ({ ...r, received: formatTime(r.createdAtMs, config.display.time_zone) })) };
  });
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
  return withResources(config, async ({ pool, queues: needQueues }) => {
    const queues = await needQueues();
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
    // One clock: display.time_zone, labelled, as on the pages; at_ms for scripts.
    (await new AuditLog(pool).recent(limit)).map((a) => ({ at: formatTime(a.atMs, config.display.time_zone), ...presentAction(a) })),
  );
}

export interface TimelineCommand {
  user?: string;
  event?: string;
  kind?: string;
  status?: string;
  channel?: string;
  code?: string;
  since?: string;
  until?: string;
  limit: string;
}

/** `notice-service inspect --user U [--since 24h] …`: the user's facts, newest first, a standing per channel. */
export async function timelineCommand(config: NoticeConfig, options: TimelineCommand) {
  const limit = Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new RoleConfigError(`--limit must be an integer from 1 to 1000, got "${options.limit}"`);
  if (options.status && !(DELIVERY_STATUSES as readonly string[]).includes(options.status))
    throw new RoleConfigError(`--status must be one of ${DELIVERY_STATUSES.join(', ')}, got "${options.status}"`);
  oneOf('--channel', options.channel, channelNames(config));
  oneOf('--kind', options.kind, noticeKindsOf(config));
  const filter = {
    userId: options.user,
    eventId: options.event,
    noticeKind: options.kind,
    status: options.status,
    channel: options.channel,
    errorCode: options.code,
    sinceMs: options.since ? parseSince(options.since) : undefined,
    untilMs: options.until ? parseSince(options.until, Date.now(), '--until') : undefined,
  };
  const policyFor = sourcePolicy(config);
  return withResources(config, async ({ pool }) => {
    const facts: ReturnType<typeof presentFact>[] = [];
    let after = null;
    // Pages of 200 facts until the limit: the keyset reaches any age the ledger holds.
    do {
      const page = await timelinePage(pool, filter, after, Math.min(200, limit - facts.length));
      facts.push(...page.facts.map((f) => presentFact(f, config.display.time_zone, (source) => policyFor(source).maxRetryCount)));
      after = page.next;
    } while (after && facts.length < limit);
    return { zone: config.display.time_zone, facts, more: after !== null };
  });
}

export interface RevokeCommand {
  eventId: string;
  source?: string;
  app?: string;
  /** How long to wait for deliver to work it off (ms); 0: ask and return. */
  waitMs: number;
}

/**
 * `notice-service revoke <event_id> [--source …] [--app …]`: asks deliver to take the fact's notices back (one
 * revocation per fact, however often asked), audits it, and waits for the outcome per channel.
 */
export async function revokeCommand(config: NoticeConfig, options: RevokeCommand): Promise<{ asked: boolean; state: string; outcome: string | null }> {
  // An id the ledger cannot hold would be cut to fit and then never match: refused, naming the limit.
  const problem = keyProblem(options.app ?? '', options.eventId);
  if (problem) throw new RoleConfigError(`cannot revoke: ${problem}`);
  return withResources(config, async ({ pool }) => {
    let source = options.source;
    let app = options.app;
    if (!source || !app) {
      const [rows] = await pool.query<RowDataPacket[]>(
        'SELECT DISTINCT source_name, app_code FROM notice_delivery_events WHERE source_event_id = ?' +
          (source ? ' AND source_name = ?' : '') +
          (app ? ' AND app_code = ?' : ''),
        [options.eventId, ...(source ? [source] : []), ...(app ? [app] : [])],
      );
      if (rows.length !== 1)
        throw new RoleConfigError(
          rows.length === 0
            ? `no notice of event "${options.eventId}" yet: give --source and --app to revoke it before it arrives`
            : `event "${options.eventId}" is in ${rows.length} sources or apps: give --source and --app`,
        );
      source = String(rows[0]!.source_name);
      app = String(rows[0]!.app_code);
    }
    const fact = { sourceName: source, appCode: app, sourceEventId: options.eventId };
    const store = new RevocationStore(pool);
    const actor = `${userInfo().username}@${hostname()}`;
    const asked = await store.request(fact, actor, Date.now());
    await new AuditLog(pool).record({ actor, via: 'cli', action: 'revoke', matched: 1, affected: asked ? 1 : 0, detail: { ...fact, repeated: !asked } });
    const deadline = Date.now() + options.waitMs;
    let current = await store.get(fact);
    while (current?.state !== 'done' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      current = await store.get(fact);
    }
    return { asked, state: current?.state ?? 'pending', outcome: current?.outcome ?? null };
  });
}

/** A filter that can only match one of these values: anything else is a usage error naming them (not "no match"). */
export function oneOf(option: string, value: string | undefined, valid: readonly string[]): void {
  if (value !== undefined && !valid.includes(value)) throw new RoleConfigError(`${option} must be one of ${valid.join(', ')}, got "${value}"`);
}

/** Every notice kind this deployment's sources produce. */
export function noticeKindsOf(config: NoticeConfig): string[] {
  return [...new Set(sourceModules(config).flatMap((m) => m.noticeKinds))];
}
