import { TencentImClient } from '../../tencent-im/client.ts';
import { MAX_MESSAGE_BYTES, messageBytes } from '../../tencent-im/message.ts';
import { c2cOfflinePush } from '../../tencent-im/offline-push.ts';
import { CHANNEL_TENCENT_IM_C2C, CHANNEL_TENCENT_PUSH } from '../../ledger/types.ts';
import { channelRoutes } from '../routing.ts';
import { UserSigCache } from '../../tencent-im/usersig.ts';
import type { ChannelContext } from '../registry.ts';
import type { DeliveryChannel } from '../types.ts';
import { tencentImC2CChannel } from './channel.ts';
import { SendPacer } from '../../tencent-im/send-pacer.ts';

/** The C2C channel of a deliver process: one keep-alive sendmsg client and the app-wide pacer it shares via Redis. */
export function createTencentImC2C(ctx: ChannelContext): DeliveryChannel {
  const { config, logger, metrics } = ctx;
  const im = config.tencent_im;
  const client = new TencentImClient(
    { baseUrl: im.base_url, sdkAppId: im.sdk_app_id, adminIdentifier: im.admin_identifier, requestTimeoutMs: im.request_timeout, idleSocketTimeoutMs: im.idle_socket_timeout, msgLifeTimeMs: im.msg_lifetime, maxSockets: config.deliver.concurrency },
    new UserSigCache(im.sdk_app_id, im.secret_key, im.admin_identifier, im.usersig_ttl),
    logger,
  );
  // Tencent's quota is per app, not per process: the pacer's clock lives in Redis and every deliver process shares it.
  const routes = channelRoutes(config);
  const pacer = new SendPacer(ctx.redis, config.redis.prefix, im.rate_limit_per_second, () => metrics?.sendsRefused.inc({ channel: CHANNEL_TENCENT_IM_C2C }));
  return tencentImC2CChannel({
    sender: client,
    pacer,
    newerVersion: ctx.newerVersion,
    skipsSuperseded: (eventType) => config.deliver.skip_superseded[eventType] === true,
    priorityLeadMs: (kind) => config.deliver.priority[kind] ?? 0,
    sendTimeoutMs: im.request_timeout * 2, // a re-sign can make it two requests
    offlinePush: (row) => c2cOfflinePush(config.offline_push, row, routes(row.eventType, row.noticeKind).includes(CHANNEL_TENCENT_PUSH), messageBytes(row.payload ?? '', row.noticeKind), MAX_MESSAGE_BYTES),
    metrics,
  });
}
