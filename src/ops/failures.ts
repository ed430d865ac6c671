import type { NoticeConfig } from '../config/schema.ts';
import type { Pool } from '../platform/mysql.ts';
import { channelNames } from '../channels/channel-set.ts';
import { sourceModules } from '../notices/sources.ts';
import { LedgerQueries, type FailedCursor, type FailedFilter } from '../ledger/queries.ts';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../ledger/status.ts';
import { RoleConfigError } from '../app/role.ts';
import { formatTime } from '../platform/clock.ts';
import { errorGuideFor } from '../ledger/error-guide.ts';
import { parseSince } from './since.ts';
import { noticeKindsOf, oneOf, withResources } from './cli-ops.ts';
import { showControls } from '../platform/text.ts';

/** `notice-service failures`: what ended in a status (failed by default) across every user, and why. */
export interface FailuresOptions {
  status?: string;
  since?: string;
  until?: string;
  channel?: string;
  kind?: string;
  source?: string;
  app?: string;
  code?: string;
  limit: string;
  after?: string;
}

export interface FailuresAnswer {
  zone: string;
  status: DeliveryStatus;
  /** Per channel and error code, largest first, with the error guide's words. */
  groups: Array<{ channel: string; code: string | null; count: number; latest: string; meaning: string | null; action: string | null }>;
  /** The counts stopped at this many rows (a floor). */
  capped: boolean;
  rows: Array<{
    updated: string;
    source: string;
    app: string;
    event_id: string;
    channel: string;
    user_id: string;
    kind: string;
    attempts: number;
    code: string | null;
    error: string | null;
  }>;
  /** Pass as --after for the next, older page; null on the last. */
  next: string | null;
  /** The requeue that acts on exactly these rows (failed only). */
  requeue: string | null;
}

const GROUP_CAP = 100_000;

export async function failuresCommand(config: NoticeConfig, options: FailuresOptions): Promise<FailuresAnswer> {
  return withResources(config, ({ pool }) => failuresQuery(pool, config, options));
}

/** The filter these options name, checked (a usage error names the valid values). */
export function failuresFilter(config: NoticeConfig, options: Omit<FailuresOptions, 'limit'>): { status: DeliveryStatus; filter: FailedFilter; since: string } {
  const status = (options.status ?? 'failed') as DeliveryStatus;
  oneOf('--status', status, DELIVERY_STATUSES);
  oneOf('--channel', options.channel, channelNames(config));
  oneOf('--kind', options.kind, noticeKindsOf(config));
  oneOf(
    '--source',
    options.source,
    sourceModules(config).map((m) => m.sourceName),
  );
  const since = options.since ?? '1h';
  const filter: FailedFilter = {
    sinceMs: parseSince(since),
    untilMs: options.until ? parseSince(options.until, Date.now(), '--until') : undefined,
    channel: options.channel,
    noticeKind: options.kind,
    sourceName: options.source,
    appCode: options.app,
    errorCode: options.code,
  };
  return { status, filter, since };
}

/** The answer, from the ledger (the CLI and the dashboard's failures page). */
export async function failuresQuery(pool: Pool, config: NoticeConfig, options: FailuresOptions): Promise<FailuresAnswer> {
  const { status, filter, since } = failuresFilter(config, options);
  const limit = Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new RoleConfigError(`--limit must be an integer from 1 to 1000, got "${options.limit}"`);
  const after = options.after ? decodeAfter(options.after) : null;
  const zone = config.display.time_zone;
  const queries = new LedgerQueries(pool);
  const [{ groups, capped }, page] = await Promise.all([
    queries.statusGroups(status, filter, GROUP_CAP),
    queries.statusNewestFirst(status, filter, after, limit),
  ]);
  return {
    zone,
    status,
    groups: groups.map((g) => {
      const guide = errorGuideFor(g.code);
      return {
        channel: g.channel,
        code: g.code,
        count: g.count,
        latest: formatTime(g.latestMs, zone),
        meaning: guide?.title ?? null,
        action: guide?.action ?? null,
      };
    }),
    capped,
    rows: page.rows.map((r) => ({
      updated: formatTime(r.updatedAtMs, zone),
      source: r.sourceName,
      app: r.appCode,
      event_id: r.sourceEventId,
      channel: r.channel,
      user_id: r.userId,
      kind: r.noticeKind,
      attempts: r.attemptCount,
      code: r.lastErrorCode,
      error: r.lastError,
    })),
    next: page.next ? encodeAfter(page.next) : null,
    requeue: status === 'failed' ? requeueLine(options, since) : null,
  };
}

/** The requeue command with the same filters: what "requeue these" means, to the row. */
function requeueLine(options: FailuresOptions, since: string): string {
  const flags: Array<[string, string | undefined]> = [
    ['--since', since],
    ['--until', options.until],
    ['--channel', options.channel],
    ['--kind', options.kind],
    ['--source', options.source],
    ['--app', options.app],
    ['--code', options.code],
  ];
  const quote = (v: string) => (/^[\w.:@+-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);
  return ['notice-service requeue --status failed', ...flags.filter(([, v]) => v !== undefined).map(([flag, v]) => `${flag} ${quote(v!)}`)].join(' ');
}

function encodeAfter(cursor: FailedCursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

function decodeAfter(token: string): FailedCursor {
  try {
    const c = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as FailedCursor;
    if (typeof c.updatedAtMs === 'number' && [c.sourceName, c.appCode, c.sourceEventId, c.channel].every((v) => typeof v === 'string')) return c;
  } catch {
    // reported below
  }
  throw new RoleConfigError('--after must be the "next" token a previous failures answer printed');
}

/** The answer as an operator reads it: the groups with what to do, then the rows. */
export function failuresAsText(answer: FailuresAnswer): string {
  const lines: string[] = [];
  const total = answer.groups.reduce((n, g) => n + g.count, 0);
  lines.push(`${total}${answer.capped ? '+' : ''} ${answer.status} row${total === 1 ? '' : 's'} (times in ${answer.zone})`);
  for (const g of answer.groups) {
    lines.push(showControls(`  ${String(g.count).padStart(6)}  ${g.channel}  ${g.code ?? '(no code)'}  last ${g.latest}${g.meaning ? `  ${g.meaning}` : ''}`));
    if (g.action) lines.push(`          what to do: ${g.action}`);
  }
  if (answer.rows.length > 0) lines.push('', 'newest first:');
  // Owner-written ids and provider text may hold terminal escapes: shown as [U+XXXX], never interpreted.
  for (const r of answer.rows)
    lines.push(
      showControls(
        `  ${r.updated}  ${r.channel}  ${r.app}  ${r.event_id}  user ${r.user_id}  ${r.kind}  ${r.attempts} attempt${r.attempts === 1 ? '' : 's'}  ${r.code ?? ''}${r.error ? `: ${r.error}` : ''}`,
      ),
    );
  if (answer.next) lines.push(`  … older: --after ${answer.next}`);
  if (answer.requeue && total > 0) lines.push('', `requeue exactly these: ${answer.requeue}`);
  return lines.join('\n');
}
