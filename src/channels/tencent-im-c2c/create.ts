import { TencentImClient } from '../../tencent-im/client.ts';
import { MAX_MESSAGE_BYTES, messageBytes } from '../../tencent-im/message.ts';
import { c2cOfflinePush } from '../../tencent-im/offline-push.ts';
import { CHANNEL_TENCENT_IM_C2C, CHANNEL_TENCENT_PUSH } from '../../ledger/types.ts';
import { appRest } from '../../tencent-im/app-rest.ts';
import type { ChannelContext } from '../types.ts';
import type { DeliveryChannel } from '../types.ts';
import { tencentImC2CChannel } from './channel.ts';
import { SendPacer } from '../../tencent-im/send-pacer.ts';
import { tencentApps } from '../../tencent-im/apps.ts';
import { perAppChannel } from '../per-app.ts';

/**
 * The C2C channel of a deliver process: per app, one keep-alive sendmsg client with that app's UserSig and the
 * app-wide pacer of that app's quota, shared with every deliver process via Redis.
 */
export function createTencentImC2C(ctx: ChannelContext): DeliveryChannel {
  const { config, logger, metrics } = ctx;
  const im = config.tencent_im;
  const { routes } = ctx;
  const byApp = new Map<string, DeliveryChannel>();
  for (const app of tencentApps(config).values()) {
    const rest = appRest(app, im, { requestTimeoutMs: im.request_timeout, maxSockets: config.deliver.concurrency });
    const client = new TencentImClient({ ...rest.options, msgLifeTimeMs: im.msg_lifetime }, rest.userSig, logger.child({ app: app.appCode }));
    // Tencent's quota is per app, not per process: the pacer's clock lives in Redis and every deliver process shares it.
    const pacer = new SendPacer(
      ctx.redis,
      app.redisPrefix,
      app.rateLimitPerSecond,
      () => metrics?.sendsRefused.inc({ channel: CHANNEL_TENCENT_IM_C2C, app: app.appCode }),
      'tencent-im',
    );
    metrics?.sendRateLimit.set({ channel: CHANNEL_TENCENT_IM_C2C, app: app.appCode }, app.rateLimitPerSecond);
    byApp.set(
      app.appCode,
      tencentImC2CChannel({
        app: app.appCode,
        sender: client,
        pacer,
        priorityLeadMs: (kind) => config.deliver.priority[kind] ?? 0,
        sendTimeoutMs: im.request_timeout * 2, // a re-sign can make it two requests
        offlinePush: (row) =>
          c2cOfflinePush(
            config.offline_push,
            row,
            routes(row.eventType, row.noticeKind).includes(CHANNEL_TENCENT_PUSH),
            messageBytes(row.payload ?? '', row.noticeKind),
            MAX_MESSAGE_BYTES,
          ),
        metrics,
      }),
    );
  }
  return perAppChannel(CHANNEL_TENCENT_IM_C2C, byApp);
}
