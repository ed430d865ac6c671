import { fileURLToPath } from 'node:url';
import { appsWithOwnTag } from '../src/config/redis-keyspace.ts';
import express from 'express';
import type { Pool } from 'mysql2/promise';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { NoticeConfig } from '../src/config/schema.ts';
import { LedgerQueries } from '../src/ledger/queries.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { sourcePolicy } from '../src/notices/sources.ts';
import { channelModule, channelModules, channelQueueSpecs } from '../src/channels/channel-set.ts';
import { AuditLog } from '../src/ops/audit-log.ts';
import { DELIVERY_STATUSES, STATUS_TABLE } from '../src/ledger/status.ts';
import { clockParts } from '../src/platform/clock.ts';
import { DeliveryHistory } from '../src/ledger/history.ts';
import { RejectStore } from '../src/intake/reject-store.ts';
import { rejectEntries } from '../src/ops/reject-entries.ts';
import { rejectsApi } from './rejects-api.ts';
import { deliverQueueName, isBatchJobData, type DeliverJobData, type DeliverQueues, type DeliverRowData } from '../queues/deliver-queue.ts';
import { basicAuth, DeviceCookies } from './auth.ts';
import { ledgerApi } from './ledger-api.ts';
import { noticesPage } from './notices-page.ts';
import { errorsPage, timelinePage } from './timeline-page.ts';
import { failuresPage } from './failures-page.ts';
import { failuresApi } from './failures-api.ts';
import { noticeKindsOf } from '../src/ops/cli-ops.ts';
import { sourceModules } from '../src/notices/sources.ts';
import { timelineApi } from './timeline-api.ts';
import { chartsRouter } from './charts.ts';
import { PipelineSampler } from './pipeline-sampler.ts';
import { errorHandler, loginThrottle, refusePipelineMutations, sameOriginWrites, securityHeaders, withoutThirdPartyAssets } from './security.ts';
import { pino, type Logger } from 'pino';
import { BackendWatch } from './backend-watch.ts';
import { boardOutagePage, OUTAGE_BANNER, outageScript } from './outage-banner.ts';

/**
 * The operator dashboard: bull-board for every notice queue and the ledger page, all under one base path and all
 * behind authentication (the only way off is an explicit local config).
 */
export function createDashboardApp(
  config: NoticeConfig,
  pool: Pool,
  queues: DeliverQueues,
  logger: Logger = pino({ level: 'silent' }),
  sampler: PipelineSampler = new PipelineSampler(pool, queues, logger),
  watch: BackendWatch = backendWatch(pool, queues),
): express.Express {
  const settings = config.dashboard;
  const base = settings.base_path;
  /** Every page of ours carries the outage banner (under the header) and its script; every script gets the nonce. */
  const withBanner = (html: string) =>
    html
      .replace('</header>', `</header>${OUTAGE_BANNER}`)
      .replace('</body>', `<script>${outageScript(`${base}/api/health`, config.display.time_zone)}</script></body>`);
  const send = (html: string) => (_req: express.Request, res: express.Response) =>
    void res.type('html').send(html.replaceAll('<script>', `<script nonce="${res.locals.cspNonce}">`));
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Behind the documented TLS proxy the client address is the proxy's; per-client throttling then needs trust proxy
  // set by the deployment, so it is left off here (docs/security.md).
  app.use(securityHeaders());
  if (settings.auth.enabled) {
    const devices = new DeviceCookies(settings.auth.username, settings.auth.password);
    app.use(loginThrottle(logger, devices, settings.auth.max_failed_logins), basicAuth(settings.auth.username, settings.auth.password, devices, base, logger));
  }
  app.use(sameOriginWrites(logger));

  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(`${base}/queues`);
  const specs = new Map(channelQueueSpecs(config).map((spec) => [spec.channel, spec]));
  const ownTag = new Set(appsWithOwnTag(config));
  const deploymentApps = Object.keys(config.apps).filter((app) => !ownTag.has(app));
  const adapters = queues.channelNames.flatMap((channel) =>
    queues.ofChannel(channel).map((queue) => {
      // A channel's shared queue takes the kinds without a queue of their own; an app group's takes only its apps.
      const spec = specs.get(channel);
      const shared = spec && !spec.ownQueueKinds.some((kind) => queue.name.startsWith(deliverQueueName(channel, kind)));
      const unsuffixed = spec && !spec.apps.some((app) => queue.name.endsWith(`.${app}`));
      const kinds = spec?.ownQueueKinds.length ? ` (${spec.ownQueueKinds.join(', ')} have theirs)` : '';
      const apps =
        unsuffixed && spec.apps.length > 0
          ? deploymentApps.length > 0
            ? ` Its app is ${deploymentApps.join(', ')} (redis_tag: deployment); ${spec.apps.join(', ')} have queues of their own.`
            : ` No app uses it (${spec.apps.join(', ')} have queues of their own): only facts of apps this deployment does not serve pass through, on ` +
              `their way to failed UNKNOWN_APP; it stays empty.`
          : '';
      const role = `${shared ? ` The catch-all for kinds without a queue of their own${kinds}; it may stay empty.` : ''}${apps}`;
      // The board is for looking: every action on a job or a queue goes around the ledger (a retried job cannot revive
      // a failed row, edited data points at another event, a changed delay or priority reorders Tencent's quota), so
      // bull-board shows none of them (its readOnlyMode is per queue, all or nothing); operators requeue from the
      // Notices page or the CLI, which move the ledger row first. The server refuses them too (refusePipelineMutations).
      const adapter = new BullMQAdapter(queue, {
        readOnlyMode: true,
        allowRetries: false,
        description: `${channelModule(config, channel)?.description ?? channel}; job data is the ledger key only. Requeue failed events from Notices.${role}`,
      });
      // Job data is only the ledger key (a batch job's: its rows' keys); show exactly that, whatever a future producer adds.
      adapter.setFormatter('data', (data: DeliverJobData) =>
        data && isBatchJobData(data) ? { rows: data.rows.map((row) => shownKey(row)) } : shownKey(data as DeliverRowData | undefined),
      );
      return adapter;
    }),
  );
  createBullBoard({
    queues: adapters,
    serverAdapter,
    options: {
      uiConfig: {
        boardTitle: 'notice-service',
        environment: { label: settings.environment.label, color: settings.environment.color },
        miscLinks: [
          { text: 'Timeline', url: `${base}/timeline` },
          { text: 'Notices (ledger)', url: `${base}/notices` },
        ],
        hideDocsLink: true,
        // One clock: the board's times in display.time_zone, 24-hour, with the zone named, like every other page.
        dateFormats: {
          short: { ...clockParts(config.display.time_zone), year: undefined, month: undefined, day: undefined, timeZoneName: 'short' },
          common: { ...clockParts(config.display.time_zone), year: undefined, month: 'short', timeZoneName: 'short' },
          full: { ...clockParts(config.display.time_zone), timeZoneName: 'short' },
        },
      },
    },
  });
  // bull-board's router is an express app of its own, which would announce itself (X-Powered-By) on every answer.
  const board = serverAdapter.getRouter() as express.Express;
  board.disable('x-powered-by');
  app.get(`${base}/api/health`, (_req, res) => void res.set('cache-control', 'no-store').json(watch.snapshot()));
  // The board reads everything from Redis: without it, its page says so instead of "No queues to display".
  app.get(`${base}/queues`, (req, res, next) => {
    if (!watch.isDown('redis') || !req.accepts('html')) return next();
    res
      .status(503)
      .type('html')
      .send(boardOutagePage(base, watch.snapshot().redis!, config.display.time_zone));
  });
  app.use(`${base}/queues`, refusePipelineMutations(), withoutThirdPartyAssets(), board);

  const policyFor = sourcePolicy(config);
  app.use(
    `${base}/api/notices`,
    ledgerApi({
      queries: new LedgerQueries(pool),
      ledger: new LedgerRepository(pool),
      pool,
      queues,
      readOnly: settings.read_only,
      maxRetryFor: (source) => policyFor(source).maxRetryCount,
      channels: channelModules(config).map((m) => ({ name: m.name, rateLimitPerSecond: m.rateLimitPerSecond(config) })),
      audit: new AuditLog(pool),
      history: new DeliveryHistory(pool, (err) => logger.warn({ err: err.message }, 'could not write delivery history')),
    }),
  );
  app.use(
    `${base}/api/notices/timeline`,
    timelineApi({ pool, history: new DeliveryHistory(pool), zone: config.display.time_zone, maxRetryFor: (source) => policyFor(source).maxRetryCount }),
  );
  app.use(
    `${base}/api/rejects`,
    rejectsApi({
      rejects: new RejectStore(pool),
      entryFor: rejectEntries(config, pool, queues, logger),
      audit: new AuditLog(pool),
      readOnly: settings.read_only,
    }),
  );
  const page = noticesPage({
    timelinePath: `${base}/timeline`,
    zone: config.display.time_zone,
    errorsPath: `${base}/errors`,
    chartsPath: `${base}/charts`,
    apiPath: `${base}/api/notices`,
    rejectsPath: `${base}/api/rejects`,
    queuesPath: `${base}/queues`,
    assetsPath: `${base}/assets`,
    environment: settings.environment,
    readOnly: settings.read_only,
    channels: channelModules(config).map((m) => m.name),
    statuses: DELIVERY_STATUSES.map((status) => ({ status, ...STATUS_TABLE[status] })),
  });
  // The pages' scripts, behind the same authentication as the pages (CSP script-src 'self' admits them).
  app.use(`${base}/assets`, express.static(fileURLToPath(new URL('./assets', import.meta.url)), { index: false, maxAge: 0, fallthrough: false }));
  app.get(`${base}/notices`, send(withBanner(page)));
  const zone = config.display.time_zone;
  const timeline = timelinePage({
    base,
    environment: settings.environment,
    channels: channelModules(config).map((m) => m.name),
    statuses: DELIVERY_STATUSES,
    zone,
  });
  app.use(
    `${base}/charts`,
    chartsRouter({
      pool,
      sampler,
      zone,
      channels: channelModules(config).map((m) => ({
        name: m.name,
        rateLimitPerSecond: m.rateLimitPerSecond(config),
        quotaCountsNotices: m.quotaCounts !== 'calls',
      })),
    }),
  );
  app.get(`${base}/timeline`, send(withBanner(timeline)));
  app.use(
    `${base}/api/failures`,
    failuresApi({ pool, config, queues, readOnly: settings.read_only, maxRetryFor: (source) => policyFor(source).maxRetryCount }),
  );
  app.get(
    `${base}/failures`,
    send(
      withBanner(
        failuresPage({
          base,
          environment: settings.environment,
          channels: channelModules(config).map((m) => m.name),
          statuses: ['failed', ...DELIVERY_STATUSES.filter((s) => s !== 'failed')],
          kinds: noticeKindsOf(config),
          sources: sourceModules(config).map((m) => m.sourceName),
          zone,
          readOnly: settings.read_only,
        }),
      ),
    ),
  );
  app.get(`${base}/errors`, send(withBanner(errorsPage({ base, environment: settings.environment }))));
  app.get(['/', base], (_req, res) => res.redirect(`${base}/queues`));
  app.use(errorHandler(logger));
  return app;
}

/** The fields of a job's row the board shows: its ledger key and event type. */
function shownKey(row: DeliverRowData | undefined) {
  return { sourceName: row?.sourceName, appCode: row?.appCode, sourceEventId: row?.sourceEventId, channel: row?.channel, eventType: row?.eventType };
}

/** MySQL and Redis as the dashboard reaches them (the ledger pool, the queues' connection). */
export function backendWatch(pool: Pool, queues: DeliverQueues): BackendWatch {
  return new BackendWatch({ mysql: () => pool.query('SELECT 1'), redis: () => queues.connection.ping() });
}
