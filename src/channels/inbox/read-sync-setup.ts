import type { Logger } from 'pino';
import type { NoticeConfig } from '../../config/schema.ts';
import { tencentApps } from '../../tencent-im/apps.ts';
import { redisPrefixes } from '../../config/redis-keyspace.ts';
import type { Redis } from '../../platform/redis.ts';
import { TencentRest } from '../../tencent-im/rest.ts';
import { SendPacer } from '../../tencent-im/send-pacer.ts';
import { appRest } from '../../tencent-im/app-rest.ts';
import { ImReadSync, type ReadSyncApp } from './read-sync.ts';
import type { InboxStore } from './store.ts';

/** Deliver's IM read sync: per Tencent app, its own REST client and its own pacer for the call. */
export function createReadSync(config: NoticeConfig, redis: Redis, logger: Logger, store: Pick<InboxStore, 'readBoundaryMs'>): ImReadSync {
  const im = config.tencent_im;
  const sync = config.inbox.im_read_sync;
  const apps = new Map<string, ReadSyncApp>();
  for (const app of tencentApps(config).values()) {
    const settings = appRest(app, im, { requestTimeoutMs: im.request_timeout, maxSockets: 4 });
    const rest = new TencentRest(settings.options, settings.userSig, logger.child({ app: app.appCode }));
    apps.set(app.appCode, {
      call: (path, body) => rest.call(path, body),
      peerAccount: app.adminIdentifier,
      close: () => rest.close(),
      pacer: new SendPacer(redis, app.redisPrefix, sync.rate_limit_per_second, () => undefined, 'tencent-im-read'),
    });
  }
  // Polled a few times per window, so a sync runs at most a quarter window after it falls due.
  return new ImReadSync({
    redis,
    prefixes: redisPrefixes(config),
    apps,
    pollMs: Math.max(100, Math.floor(sync.window / 4)),
    retryDelaysMs: [1000, 2000, 4000],
    logger,
    readBoundaryMs: (owner) => store.readBoundaryMs(owner),
  });
}
