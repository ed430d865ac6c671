import { CHANNEL_TENCENT_PUSH } from '../../ledger/types.ts';
import { templateFor } from '../../tencent-im/offline-push.ts';
import type { ChannelModule } from '../types.ts';
import { isDocumentedCode } from '../../tencent-im/error-codes.ts';
import { tencentPushConfigShape } from './config.ts';

/** Phone pushes through TIMPush `v4/timpush/batch`: identical pushes share a call, within the app's push quota. */
export const tencentPushModule: ChannelModule<typeof tencentPushConfigShape> = {
  name: CHANNEL_TENCENT_PUSH,
  configKey: 'tencent_push',
  configShape: tencentPushConfigShape,
  description: 'Phone pushes (Tencent TIMPush batch)',
  kinds: (config) => (config.tencent_push.enabled ? config.tencent_push.kinds : []),
  ownQueueKinds: () => [],
  concurrency: (config) => config.tencent_push.concurrency,
  // A row may wait batch_linger for its call, and the call may take two HTTP timeouts (a re-sign).
  longestSendMs: (config) => config.tencent_push.request_timeout * 2 + config.tencent_push.batch_linger,
  rateLimitPerSecond: (config) => config.tencent_push.rate_limit_per_second || null,
  quotaCounts: 'calls',
  escalateAfterMs: (config, kind) => config.tencent_push.escalate_after[kind] ?? null,
  digestRule: (config, kind) => {
    const d = config.tencent_push.digest[kind];
    return d ? { windowMs: d.window, firstAtOnce: d.first_at_once, byRoom: d.by_room } : null;
  },
  configProblems: (config) =>
    Object.keys(config.tencent_push.escalate_after)
      .filter((kind) => !config.inbox.enabled || !(config.inbox.kinds.includes(kind) || config.inbox.kinds.includes('*')))
      .map((kind) => `tencent_push.escalate_after.${kind}: the inbox does not take ${kind}, so there is no item to wait for (inbox.kinds)`),
  senderProblem: (config) => {
    if (!config.tencent_im.enabled) return 'tencent_push needs tencent_im (its endpoint, app and admin key): set tencent_im.enabled, or turn tencent_push off';
    // A kind with no template would fail every push; say so at start-up instead.
    const untemplated = config.tencent_push.kinds.filter((k) => k !== '*' && !templateFor(config.offline_push, '', k, {}));
    return untemplated.length > 0 ? `tencent_push routes ${untemplated.join(', ')} but offline_push.templates has no entry for it` : null;
  },
  documentedErrorCode: isDocumentedCode,
  create: async (ctx) => (await import('./create.ts')).createTencentPush(ctx),
  probe: async () => (await import('./probe.ts')).tencentPushProbe,
};
