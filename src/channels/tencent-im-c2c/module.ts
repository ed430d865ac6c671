import { CHANNEL_TENCENT_IM_C2C, CHANNEL_TENCENT_PUSH } from '../../ledger/types.ts';
import { prioritisedKinds } from '../../config/primitives.ts';
import { tencentImAppShape, tencentImConfigShape } from '../../tencent-im/config.ts';
import { liftLegacyTencentApps } from '../../tencent-im/legacy-apps.ts';
import { appsProblems } from '../../tencent-im/apps.ts';
import type { ChannelModule } from '../types.ts';
import { isDocumentedCode } from '../../tencent-im/error-codes.ts';

/** Tencent IM C2C: a TIMCustomElem message per notice, paced within each app's sendmsg quota. */
export const tencentImC2cModule: ChannelModule<typeof tencentImConfigShape> = {
  name: CHANNEL_TENCENT_IM_C2C,
  configKey: 'tencent_im',
  configShape: tencentImConfigShape,
  // Each app's Tencent account: apps.<app_code>.tencent_im (the push channel signs with the same one).
  appShape: tencentImAppShape,
  upgradeConfig: liftLegacyTencentApps,
  description: 'Tencent IM C2C messages',
  // Off, it takes no kind: a deployment without Tencent (webhook only) routes nothing here and is not refused.
  kinds: (config) => (config.tencent_im.enabled ? config.tencent_im.kinds : []),
  ownQueueKinds: (config) => prioritisedKinds(config),
  concurrency: (config) => config.deliver.concurrency,
  // A send can take two HTTP timeouts (a re-sign makes it two requests).
  longestSendMs: (config) => config.tencent_im.request_timeout * 2,
  rateLimitPerSecond: (config) => config.tencent_im.rate_limit_per_second || null,
  // A user who turned a kind's phone pushes off gets its C2C message without Tencent's offline push either.
  silencedBy: CHANNEL_TENCENT_PUSH,
  senderProblem: (config) =>
    config.tencent_im.enabled
      ? null
      : 'tencent_im.enabled is false, so every notice would be dropped. Enable it (or point tencent_im.base_url at fake-im), or route no kinds to it ' +
        '(tencent_im.kinds: [])',
  configProblems: (config) => appsProblems(config),
  documentedErrorCode: isDocumentedCode,
  create: async (ctx) => (await import('./create.ts')).createTencentImC2C(ctx),
  probe: async () => (await import('./probe.ts')).tencentImC2cProbe,
};
