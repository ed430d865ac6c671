import { CHANNEL_TENCENT_PUSH } from '../../ledger/types.ts';
import { TencentPushClient } from '../../tencent-im/push-client.ts';
import { SendPacer } from '../../tencent-im/send-pacer.ts';
import { appRest } from '../../tencent-im/app-rest.ts';
import type { ChannelContext } from '../types.ts';
import type { DeliveryChannel } from '../types.ts';
import { tencentPushChannel } from './channel.ts';
import { RecentPushes } from './recent-pushes.ts';
import { tencentApps } from '../../tencent-im/apps.ts';
import { redisPrefixOf } from '../../config/redis-keyspace.ts';
import { perAppChannel } from '../per-app.ts';
import { capSendId, frequencyCap } from '../../delivery/send-helpers/frequency-cap.ts';

/** The push channel of a deliver process: per app, its own keep-alive client and its own app-wide pacer (that app's timpush quota). */
export function createTencentPush(ctx: ChannelContext): DeliveryChannel {
  const { config, logger, metrics } = ctx;
  const im = config.tencent_im;
  const push = config.tencent_push;
  const byApp = new Map<string, DeliveryChannel>();
  for (const app of tencentApps(config).values()) {
    const rest = appRest(app, im, { requestTimeoutMs: push.request_timeout, maxSockets: 16 });
    const client = new TencentPushClient(rest.options, rest.userSig, logger.child({ app: app.appCode }));
    const pacer = new SendPacer(
      ctx.redis,
      app.redisPrefix,
      app.pushRateLimitPerSecond,
      () => metrics?.sendsRefused.inc({ channel: CHANNEL_TENCENT_PUSH, app: app.appCode }),
      'tencent-push',
    );
    metrics?.sendRateLimit.set({ channel: CHANNEL_TENCENT_PUSH, app: app.appCode }, app.pushRateLimitPerSecond);
    byApp.set(
      app.appCode,
      tencentPushChannel({
        app: app.appCode,
        sender: client,
        pacer,
        offlinePush: config.offline_push,
        fromAccount: app.adminIdentifier,
        maxAccounts: push.batch_max_accounts,
        lingerMs: push.batch_linger,
        retryAmbiguous: push.retry_ambiguous,
        sendTimeoutMs: push.request_timeout * 2, // a re-sign can make it two requests
        metrics,
        markSending: (rows, ref) => ctx.ledger.markAttemptStarted(rows, ref),
        ...(push.resend_guard > 0 ? { recent: new RecentPushes(ctx.redis, `${app.redisPrefix}:push-sent`, push.resend_guard) } : {}),
      }),
    );
  }
  // The per-user push cap wraps the channel (before batching, so every row is admitted or held on its own).
  const exempt = (kind: string) => config.preferences.mandatory_kinds.includes(kind);
  return frequencyCap(perAppChannel(CHANNEL_TENCENT_PUSH, byApp), {
    redis: ctx.redis,
    prefixOf: redisPrefixOf(config),
    windows: push.frequency_cap.map((w) => ({ max: w.max, perMs: w.per })),
    exempt,
    // The ledger's view of a window counts what the window itself counts: mandatory pushes pass uncounted.
    recent: async (appCode, userId, sinceMs) =>
      (await ctx.ledger.recentSends(appCode, userId, CHANNEL_TENCENT_PUSH, sinceMs))
        .filter((s) => !exempt(s.noticeKind))
        .map((s) => ({
          id: s.inFlight ? `maybe:${capSendId(s)}` : capSendId(s),
          atMs: s.atMs,
        })),
  });
}
