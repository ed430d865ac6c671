import express, { type Request, type Response } from 'express';
import { z } from 'zod';
import type { Pool } from '../src/platform/mysql.ts';
import { decodeCursor, encodeCursor, timelinePage, TimelineFilterError } from '../src/ledger/timeline.ts';
import { presentFact } from '../src/ledger/present-fact.ts';
import { withTimelines } from '../src/ledger/present.ts';
import type { DeliveryHistory } from '../src/ledger/history.ts';
import { DELIVERY_STATUSES } from '../src/ledger/status.ts';
import { parseSince } from '../src/ops/since.ts';
import { formatTime } from '../src/platform/clock.ts';

/** The timeline's query string, as the page's URL carries it. */
const timelineQuery = z.strictObject({
  user_id: z.string().trim().max(256).optional(),
  event_id: z.string().trim().max(764).optional(),
  kind: z.string().trim().max(32).optional(),
  status: z
    .enum(DELIVERY_STATUSES as [string, ...string[]])
    .optional()
    .or(z.literal('')),
  channel: z.string().trim().max(32).optional(),
  error_code: z.string().trim().max(32).optional(),
  since: z.string().trim().max(40).optional(),
  until: z.string().trim().max(40).optional(),
  page_token: z.string().max(2000).optional(),
  limit: z.coerce.number().int().min(1).max(200).optional(),
});

/**
 * `GET /timeline`: a user's (or an event's) facts newest first, each with a badge per channel and the reason in
 * words, keyset-paged; every filter is a query parameter, so a URL is the whole question.
 */
export function timelineApi(deps: { pool: Pool; history: DeliveryHistory; zone: string; maxRetryFor: (source: string) => number }): express.Router {
  const router = express.Router();
  router.get('/', async (req: Request, res: Response) => {
    const parsed = timelineQuery.safeParse(req.query);
    if (!parsed.success) return void res.status(400).json({ error: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
    const q = parsed.data;
    const blank = (v: string | undefined) => (v ? v : undefined);
    try {
      const page = await timelinePage(
        deps.pool,
        {
          userId: blank(q.user_id),
          eventId: blank(q.event_id),
          noticeKind: blank(q.kind),
          status: blank(q.status),
          channel: blank(q.channel),
          errorCode: blank(q.error_code),
          sinceMs: q.since ? parseSince(q.since) : undefined,
          untilMs: q.until ? parseSince(q.until) : undefined,
        },
        q.page_token ? decodeCursor(q.page_token) : null,
        q.limit ?? 50,
      );
      // Each row's steps (attempts, retries, requeues) for the expanded view, in one query for the page.
      const steps = await withTimelines(
        deps.history,
        page.facts.flatMap((f) => f.rows),
      );
      const stepsOf = new Map(
        steps.map((s) => [
          `${s.source_name}\u0000${s.app_code}\u0000${s.source_event_id}\u0000${s.channel}`,
          s.timeline.map((step) => ({ ...step, at: formatTime(step.at_ms, deps.zone) })),
        ]),
      );
      res.json({
        zone: deps.zone,
        facts: page.facts.map((fact) => {
          const shown = presentFact(fact, deps.zone, deps.maxRetryFor);
          return {
            ...shown,
            channels: shown.channels.map((c) => ({
              ...c,
              steps: stepsOf.get(`${fact.sourceName}\u0000${fact.appCode}\u0000${fact.sourceEventId}\u0000${c.channel}`) ?? [],
            })),
          };
        }),
        next_page_token: page.next ? encodeCursor(page.next) : null,
      });
    } catch (err) {
      if (err instanceof TimelineFilterError || (err as Error).name === 'RoleConfigError') return void res.status(400).json({ error: (err as Error).message });
      throw err;
    }
  });
  return router;
}
