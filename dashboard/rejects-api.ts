import express, { type Request, type Response } from 'express';
import { presentBody, type RejectStore, type RejectSummary } from '../src/intake/reject-store.ts';
import { requeueRejected, type RejectRequeueDeps } from '../src/ops/reject-requeue.ts';
import type { AuditLog } from '../src/ops/audit-log.ts';

export interface RejectsApiDeps {
  rejects: RejectStore;
  entryFor: RejectRequeueDeps['entryFor'];
  audit: AuditLog;
  readOnly: boolean;
}

const SINCE = /^(\d{1,4})(m|h|d)$/;

/** MQ messages acked without a ledger row (notice_rejected_messages): list, view the raw body safely, requeue. */
export function rejectsApi(deps: RejectsApiDeps): express.Router {
  const router = express.Router();

  router.get('/', async (req: Request, res: Response) => {
    const reason = typeof req.query.reason === 'string' ? req.query.reason.slice(0, 200) : '';
    const since = typeof req.query.since === 'string' && req.query.since ? SINCE.exec(req.query.since) : null;
    if (typeof req.query.since === 'string' && req.query.since && !since) return void res.status(400).json({ error: 'since must look like 30m, 2h or 7d' });
    const pageSize = Math.min(200, Math.max(1, Math.trunc(Number(req.query.page_size ?? 50)) || 50));
    const page = Math.min(100_000, Math.max(1, Math.trunc(Number(req.query.page ?? 1)) || 1));
    const sinceMs = since ? Date.now() - Number(since[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[since[2] as 'm' | 'h' | 'd'] : undefined;
    const { rows, total } = await deps.rejects.list({ reason: reason || undefined, sinceMs, limit: pageSize, offset: (page - 1) * pageSize });
    res.json({ rows: rows.map(present), total, page, page_size: pageSize });
  });

  router.get('/:id', async (req: Request, res: Response) => {
    const id = Number(req.params.id);
    if (!Number.isSafeInteger(id) || id <= 0) return void res.status(400).json({ error: 'id must be a positive integer' });
    const message = await deps.rejects.get(id);
    if (!message) return void res.status(404).json({ error: `no rejected message ${id}` });
    res.json({ ...present(message), body: presentBody(message.rawBody) });
  });

  router.post('/requeue', express.json({ limit: '64kb' }), async (req: Request, res: Response) => {
    if (deps.readOnly) return void res.status(405).json({ error: 'dashboard is read-only' });
    if (!req.is('application/json')) return void res.status(415).json({ error: 'send application/json' });
    const ids = req.body?.ids;
    if (!Array.isArray(ids) || ids.length === 0 || ids.length > 200 || !ids.every((id) => Number.isSafeInteger(id) && id > 0)) {
      return void res.status(400).json({ error: 'ids must be a non-empty array of positive integers (at most 200)' });
    }
    const result = await requeueRejected({ rejects: deps.rejects, entryFor: deps.entryFor }, ids);
    await deps.audit.record({
      actor: typeof res.locals.operator === 'string' ? res.locals.operator : 'anonymous (dashboard auth off)',
      via: 'dashboard',
      action: 'requeue_rejected',
      matched: ids.length - result.missing.length,
      affected: result.requeued.length,
      detail: { ids: ids.slice(0, 20), still_rejected: result.stillRejected.length, missing: result.missing.length },
    });
    res.json({ requeued: result.requeued, still_rejected: result.stillRejected, missing: result.missing });
  });

  return router;
}

function present(r: RejectSummary) {
  return {
    id: r.id,
    source_name: r.sourceName,
    message_id: r.messageId,
    topic: r.topic,
    tag: r.tag,
    keys: r.keys,
    delivery_attempt: r.deliveryAttempt,
    reason: r.reason,
    created_at_ms: r.createdAtMs,
    body_bytes: r.bodyBytes,
    kept_bytes: r.keptBytes,
    body_sha256: r.bodySha256,
  };
}
