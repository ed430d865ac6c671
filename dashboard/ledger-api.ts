import express, { type Request, type Response } from 'express';
import type { LedgerQueries } from '../src/ledger/queries.ts';
import type { LedgerKey } from '../src/ledger/types.ts';
import type { LedgerRepository } from '../src/ledger/repository.ts';
import { runRequeue } from '../src/ops/requeue-run.ts';
import type { Pool } from '../src/platform/mysql.ts';
import { presentRow, withTimelines } from '../src/ledger/present.ts';
import type { DeliveryHistory } from '../src/ledger/history.ts';
import { presentAction, type AuditLog } from '../src/ops/audit-log.ts';
import type { DeliverQueues } from '../queues/deliver-queue.ts';

export interface LedgerApiDeps {
  queries: LedgerQueries;
  ledger: LedgerRepository;
  pool: Pool;
  queues: DeliverQueues;
  readOnly: boolean;
  maxRetryFor: (source: string) => number;
  /** Every channel, with its provider's quota (null: none), for the send-rate tiles and the channel filter. */
  channels: ReadonlyArray<{ name: string; rateLimitPerSecond: number | null }>;
  audit: AuditLog;
  history: DeliveryHistory;
}

/** JSON API over notice_delivery_events: look up by business key, list failed rows, requeue them. */
export function ledgerApi(deps: LedgerApiDeps): express.Router {
  const router = express.Router();

  router.get('/', async (req: Request, res: Response) => {
    const eventId = typeof req.query.event_id === 'string' ? req.query.event_id.trim() : '';
    const userId = typeof req.query.user_id === 'string' ? req.query.user_id.trim() : '';
    if (!eventId && !userId) return void res.status(400).json({ error: 'give event_id or user_id' });
    const rows = eventId ? await deps.queries.byEventId(eventId) : await deps.queries.byUserId(userId);
    res.json({ rows: await withTimelines(deps.history, rows) });
  });

  // One event's payload, asked for explicitly (the "payload" button of a search result); lists never carry it.
  router.get('/payload', async (req: Request, res: Response) => {
    const [key] = parseKeys([req.query]) ?? [];
    if (!key) return void res.status(400).json({ error: 'give source_name, app_code, source_event_id and channel' });
    const row = await deps.ledger.get(key);
    if (!row) return void res.status(404).json({ error: 'no such ledger row' });
    res.json({ source_event_id: row.sourceEventId, channel: row.channel, payload: row.payload });
  });

  router.get('/summary', async (_req: Request, res: Response) => {
    const glance = await deps.queries.glance(Date.now());
    res.json({
      window: '1h',
      by_status: glance.byStatus,
      oldest_pending_age_ms: glance.oldestPendingAgeMs,
      channels: deps.channels.map((c) => ({
        channel: c.name,
        send_rate_per_second: Math.round(((glance.deliveredLastMinute[c.name] ?? 0) / 60) * 10) / 10,
        rate_limit_per_second: c.rateLimitPerSecond,
      })),
    });
  });

  router.get('/audit', async (_req: Request, res: Response) => {
    const actions = await deps.audit.recent(20);
    res.json({ actions: actions.map(presentAction) });
  });

  router.get('/failed', async (req: Request, res: Response) => {
    const pageSize = clamp(Number(req.query.page_size ?? 50), 1, 200);
    const page = clamp(Number(req.query.page ?? 1), 1, 100_000);
    const source = typeof req.query.source === 'string' && req.query.source ? req.query.source : undefined;
    const channel = typeof req.query.channel === 'string' && req.query.channel ? req.query.channel : undefined;
    const names = deps.channels.map((c) => c.name);
    if (channel !== undefined && !names.includes(channel)) return void res.status(400).json({ error: `channel must be one of ${names.join(', ')}` });
    const { rows, total } = await deps.queries.byStatus('failed', { limit: pageSize, offset: (page - 1) * pageSize, sourceName: source, channel });
    res.json({ rows: rows.map(presentRow), total, page, page_size: pageSize });
  });

  router.post('/requeue', express.json({ limit: '256kb' }), async (req: Request, res: Response) => {
    if (deps.readOnly) return void res.status(405).json({ error: 'dashboard is read-only' });
    // JSON only: a cross-site form cannot send it without a CORS preflight, which we never grant.
    if (!req.is('application/json')) return void res.status(415).json({ error: 'send application/json' });
    const keys = parseKeys(req.body?.keys);
    if (!keys) return void res.status(400).json({ error: 'keys must be a non-empty array of {source_name, app_code, source_event_id, channel} (at most 500)' });
    const operator = typeof res.locals.operator === 'string' ? res.locals.operator : 'anonymous (dashboard auth off)';
    const result = await runRequeue({ pool: deps.pool, queues: deps.queues, maxRetryFor: deps.maxRetryFor }, { actor: operator, via: 'dashboard' }, { keys });
    res.json({
      requeued: result.requeued.map((k) => k.sourceEventId),
      skipped: result.skipped.map((s) => ({ source_event_id: s.key.sourceEventId, reason: s.reason })),
    });
  });

  return router;
}

function parseKeys(value: unknown): LedgerKey[] | null {
  if (!Array.isArray(value) || value.length === 0 || value.length > 500) return null;
  const keys: LedgerKey[] = [];
  for (const v of value) {
    if (!v || typeof v !== 'object') return null;
    const k = v as Record<string, unknown>;
    if (![k.source_name, k.app_code, k.source_event_id, k.channel].every((x) => typeof x === 'string')) return null;
    keys.push({ sourceName: k.source_name as string, appCode: k.app_code as string, sourceEventId: k.source_event_id as string, channel: k.channel as string });
  }
  return keys;
}

function clamp(n: number, min: number, max: number): number {
  return Number.isFinite(n) ? Math.min(max, Math.max(min, Math.floor(n))) : min;
}
