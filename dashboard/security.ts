import { randomBytes } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';
import { rateLimit } from 'express-rate-limit';
import type { DeviceCookies } from './auth.ts';
import type { Logger } from 'pino';

/**
 * The dashboard is an admin tool that can requeue notices and change queues: it is guarded like one. Each piece
 * here is one rule, applied to every route under the base path (bull-board's API included).
 */

/**
 * helmet's headers with a CSP that allows only this origin (the pages' scripts are files under <base>/assets; a
 * per-response nonce admits the one inline script left, the outage banner's), forbids framing, and no-store on
 * everything: pages and JSON carry user ids.
 */
export function securityHeaders(): RequestHandler[] {
  return [
    (_req, res, next) => {
      res.locals.cspNonce = randomBytes(16).toString('base64');
      res.set('Cache-Control', 'no-store');
      next();
    },
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'self'"],
          scriptSrc: ["'self'", (_req, res) => `'nonce-${(res as Response).locals.cspNonce}'`],
          // bull-board's markup carries inline style attributes; styles cannot run code.
          styleSrc: ["'self'", "'unsafe-inline'"],
          imgSrc: ["'self'", 'data:'],
          fontSrc: ["'self'"],
          connectSrc: ["'self'"],
          objectSrc: ["'none'"],
          baseUri: ["'self'"],
          formAction: ["'self'"],
          frameAncestors: ["'none'"],
        },
      },
      frameguard: { action: 'deny' },
      referrerPolicy: { policy: 'no-referrer' },
      // Plain HTTP behind a TLS proxy is the deployment (docs/security.md); HSTS belongs to that proxy.
      strictTransportSecurity: false,
    }),
  ];
}

/**
 * Cross-site request forgery: a browser that holds the operator's Basic credentials sends them with any request,
 * even one a foreign page makes. Every write must come from this origin (Sec-Fetch-Site, else Origin against Host)
 * and carry JSON when it has a body, which a foreign page cannot send without a CORS preflight that is never
 * granted. Clients that are not browsers send neither header and are not at risk.
 */
export function sameOriginWrites(logger: Logger): RequestHandler {
  return (req, res, next) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return next();
    const site = req.get('sec-fetch-site');
    const origin = req.get('origin');
    if (isCrossSite(site, origin, req.get('host'))) {
      logger.warn({ method: req.method, path: req.path, origin, sec_fetch_site: site, ip: req.ip }, 'dashboard refused a cross-site write');
      return void res.status(403).json({ error: 'cross-site requests may not change anything here' });
    }
    const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
    if (hasBody && !req.is('application/json')) return void res.status(415).json({ error: 'send application/json' });
    next();
  };
}

/** Sec-Fetch-Site when the browser sends it; else Origin against Host; neither header: not a browser. */
function isCrossSite(site: string | undefined, origin: string | undefined, host: string | undefined): boolean {
  if (site) return site !== 'same-origin' && site !== 'none';
  if (origin === undefined) return false;
  if (origin === 'null' || host === undefined) return true;
  try {
    return new URL(origin).host !== host;
  } catch {
    return true;
  }
}

/**
 * bull-board calls that would make the queue disagree with the ledger — a job added by hand (no ledger row), a queue
 * obliterated or emptied (jobs gone while rows wait), job data edited (a different key), a queue-wide rate limit or
 * concurrency persisted in Redis (the send pacer owns the rate) — are refused. Operators requeue from the Notices
 * page; the reconciler rebuilds anything removed.
 */
const PIPELINE_MUTATIONS: Array<{ method: string; pattern: RegExp; why: string }> = [
  { method: 'POST', pattern: /^\/api\/queues\/[^/]+\/add$/, why: 'adding jobs by hand bypasses the ledger' },
  { method: 'PUT', pattern: /^\/api\/queues\/[^/]+\/obliterate$/, why: 'obliterating the queue strands its ledger rows until the reconciler rebuilds them' },
  { method: 'PUT', pattern: /^\/api\/queues\/[^/]+\/empty$/, why: 'emptying the queue strands its ledger rows until the reconciler rebuilds them' },
  { method: 'PATCH', pattern: /^\/api\/queues\/[^/]+\/[^/]+\/update-data$/, why: 'job data is the ledger key; editing it points the job at another event' },
  {
    method: 'PUT',
    pattern: /^\/api\/queues\/[^/]+\/(concurrency|rate-limit)$/,
    why: "the send rate is the send pacer's (tencent_im.rate_limit_per_second), not a queue setting",
  },
];

export function refusePipelineMutations(): RequestHandler {
  return (req, res, next) => {
    const hit = PIPELINE_MUTATIONS.find((m) => m.method === req.method && m.pattern.test(req.path));
    if (hit) return void res.status(403).json({ error: `disabled in notice-service: ${hit.why}` });
    next();
  };
}

/**
 * Failed logins are logged and, per client address, limited to `maxFailures` in a window (then 429 with
 * Retry-After); successful requests do not count. A browser with a device cookie (it logged in before) is not
 * limited by its address, so an attacker guessing from the operators' address (behind a proxy, every operator's)
 * slows down without locking out the operators who hold the password.
 */
export function loginThrottle(logger: Logger, devices: DeviceCookies, maxFailures = 20, windowMs = 15 * 60_000): RequestHandler {
  return rateLimit({
    windowMs,
    limit: maxFailures,
    skipSuccessfulRequests: true,
    // A request without credentials is a browser's first try before its prompt, not a guess.
    skip: (req) => req.get('authorization') === undefined || devices.recognises(req),
    // Only refused credentials count: a 404 or a 400 is not a guess at the password.
    requestWasSuccessful: (_req, res) => res.statusCode !== 401,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    handler: (req, res) => {
      logger.warn({ ip: req.ip, path: req.path }, 'dashboard login throttled: too many failed logins from this address');
      res
        .status(429)
        .type('text/plain')
        .send('too many failed logins from this address; try again later (a browser that has logged in here before is not limited)');
    },
  });
}

/** bull-board's page links a web font from a third-party host: the page is served without it (air-gapped, no leaks). */
export function withoutThirdPartyAssets(): RequestHandler {
  return (_req, res, next) => {
    const render = res.render.bind(res);
    res.render = ((view: string, options?: object) =>
      render(view, options ?? {}, (err: Error | null, html: string) => {
        if (err) return next(err);
        res.type('html').send(html.replace(/<link[^>]+href="https?:\/\/[^"]*"[^>]*>/g, ''));
      })) as Response['render'];
    next();
  };
}

/** Bad bodies are the client's fault (400, 413), not a 500; internal errors say nothing of their cause. */
export function errorHandler(logger: Logger) {
  return (err: Error & { type?: string; status?: number }, req: Request, res: Response, _next: NextFunction) => {
    if (err.type === 'entity.parse.failed') return void res.status(400).json({ error: 'the body is not valid JSON' });
    if (err.type === 'entity.too.large') return void res.status(413).json({ error: 'the body is too large' });
    if (err.status && err.status >= 400 && err.status < 500) return void res.status(err.status).json({ error: 'bad request' });
    logger.error({ err: err.message, path: req.path }, 'dashboard request failed');
    res.status(500).json({ error: 'internal error (the dashboard log says why)' });
  };
}
