import express, { type Request, type Response } from 'express';
import { z } from 'zod';
import type { Pool } from '../src/platform/mysql.ts';
import type { NoticeConfig } from '../src/config/schema.ts';
import type { DeliverQueues } from '../queues/deliver-queue.ts';
import { failuresFilter, failuresQuery, type FailuresOptions } from '../src/ops/failures.ts';
import { runRequeue } from '../src/ops/requeue-run.ts';

/** The filters, as the page's URL (and the requeue's body) carry them: the CLI's options by their long names. */
const filters = {
  status: z.string().trim().max(32).optional(),
  since: z.string().trim().max(40).optional(),
  until: z.string().trim().max(40).optional(),
  channel: z.string().trim().max(32).optional(),
  kind: z.string().trim().max(32).optional(),
  source: z.string().trim().max(64).optional(),
  app: z.string().trim().max(32).optional(),
  code: z.string().trim().max(32).optional(),
};
const listQuery = z.strictObject({ ...filters, after: z.string().max(2000).optional(), limit: z.string().max(4).optional() });
const requeueBody = z.strictObject({ ...filters, expected: z.number().int().min(0) });

/** Empty form fields mean "any". */
function options(q: Record<string, string | undefined>): Omit<FailuresOptions, 'limit'> {
  return Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined && v !== '')) as Omit<FailuresOptions, 'limit'>;
}

/**
 * `GET /failures`: every user's rows in a status, grouped by channel and code with what to do, newest rows paged
 * (what `notice-service failures` answers). `POST /failures/requeue`: requeue exactly the rows a filter shows, once
 * the operator confirmed their count; refused when the count changed since (the page shows it again).
 */
export function failuresApi(deps: {
  pool: Pool;
  config: NoticeConfig;
  queues: DeliverQueues;
  readOnly: boolean;
  maxRetryFor: (source: string) => number;
}): express.Router {
  const router = express.Router();
  const bad = (res: Response, err: unknown) => {
    if ((err as Error).name === 'RoleConfigError') return void res.status(400).json({ error: (err as Error).message });
    throw err;
  };
  router.get('/', async (req: Request, res: Response) => {
    const parsed = listQuery.safeParse(req.query);
    if (!parsed.success) return void res.status(400).json({ error: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
    const { after, limit, ...rest } = parsed.data;
    try {
      res.json(await failuresQuery(deps.pool, deps.config, { ...options(rest), limit: limit || '50', ...(after ? { after } : {}) }));
    } catch (err) {
      bad(res, err);
    }
  });
  router.post('/requeue', express.json({ limit: '4kb' }), async (req: Request, res: Response) => {
    if (deps.readOnly) return void res.status(403).json({ error: 'this dashboard is read-only (dashboard.read_only)' });
    const parsed = requeueBody.safeParse(req.body);
    if (!parsed.success) return void res.status(400).json({ error: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
    const { expected, ...rest } = parsed.data;
    try {
      const { status, filter } = failuresFilter(deps.config, options(rest));
      if (status !== 'failed') return void res.status(400).json({ error: 'only failed rows can be requeued' });
      const operator = typeof res.locals.operator === 'string' ? res.locals.operator : 'anonymous (dashboard auth off)';
      const run = { pool: deps.pool, queues: deps.queues, maxRetryFor: deps.maxRetryFor };
      const who = { actor: operator, via: 'dashboard' as const };
      const count = await runRequeue(run, who, { filter, detail: { ...rest, confirmation: 'page' } }, { dryRun: true });
      if (count.matched !== expected)
        return void res
          .status(409)
          .json({ error: `${count.matched} rows match now, not the ${expected} you confirmed; nothing changed`, matched: count.matched });
      const result = await runRequeue(run, who, { filter, detail: { ...rest, confirmation: 'page' } });
      res.json({ matched: result.matched, requeued: result.requeued.length, skipped: result.skipped.length });
    } catch (err) {
      bad(res, err);
    }
  });
  return router;
}
