import type { BlockOf } from '../../config/schema.ts';
import { z } from 'zod';
import { durationMs } from '../../config/duration.ts';
import { kindList } from '../../config/primitives.ts';

/**
 * The tencent_push channel: TIMPush `v4/timpush/batch`, a phone notification that is not an IM message. Same
 * endpoint, app and admin UserSig as tencent_im; its own quota, queue, retries and dead letter.
 */
export const tencentPush = z.strictObject({
  enabled: z.boolean().default(false),
  kinds: kindList.default(() => ['activity_notice', 'vip_notice']),
  /** Calls per second for the whole app (Tencent documents 10-40 by edition); shared by every deliver process. */
  rate_limit_per_second: z.number().int().min(0).default(30),
  request_timeout: durationMs.default(3000),
  /**
   * Resend a push whose request may have reached Tencent (timeout or reset after the body was written)? Tencent
   * dedups MsgRandom only within one second, so a resend may show twice on the phone. false: record it as
   * `delivered_unconfirmed` and stop.
   */
  retry_ambiguous: z.boolean().default(false),
  /**
   * How long an accepted push is remembered in Redis (one sorted set per app), so a push whose ledger row a MySQL
   * failover lost, recorded again, is not sent twice (TIMPush drops a repeated MsgRandom only within one second).
   * Costs ~80 bytes of Redis per pushed account in the window; 0 = off.
   */
  resend_guard: durationMs.default(120_000),
  /** Accounts per call when identical pushes are batched (Tencent allows 1-500). */
  batch_max_accounts: z.number().int().min(1).max(500).default(500),
  /** How long a push waits for identical ones to share its call when no send slot is waiting anyway. */
  batch_linger: durationMs.default(20),
  /** Concurrent push deliveries per deliver process: the most rows one batch can gather there. */
  concurrency: z.number().int().min(1).max(2000).default(500),
  /**
   * Per user, at most `max` pushes in every `per` window (e.g. [{max: 3, per: 1h}, {max: 10, per: 24h}]), across deliver
   * processes; an over-cap push ends suppressed (frequency_cap) while the notice still reaches the inbox and C2C.
   * Mandatory kinds (preferences.mandatory_kinds) are not counted. [] = no cap.
   */
  frequency_cap: z
    .array(z.strictObject({ max: z.number().int().min(1).max(10_000), per: durationMs }))
    .max(5)
    .default(() => []),
  /**
   * Per notice kind, push only if the inbox item is still unread this long after the fact's commit (e.g.
   * {activity_notice: 5m}): the push waits in the ledger, then ends skipped_read if the item was read, archived or
   * deleted. The kind must go to the inbox too.
   */
  escalate_after: z.record(z.string().min(1), durationMs).default(() => ({})),
  /**
   * Per notice kind, a digest: a user's pushes of the kind within `window` (of one room with by_room) become one
   * summary push — the newest notice, its title prefixed with the count — sent when the window closes; with
   * first_at_once the first goes at once and the summary covers the rest. The inbox and C2C keep every notice.
   */
  digest: z
    .record(
      z.string().min(1),
      z.strictObject({ window: durationMs.default(60_000), first_at_once: z.boolean().default(false), by_room: z.boolean().default(false) }),
    )
    .default(() => ({})),
});
export type TencentPushConfig = z.infer<typeof tencentPush>;

export const tencentPushConfigShape = { tencent_push: tencentPush.default(() => tencentPush.parse({})) };

// The core's config type lists this block without importing this module (src/config/schema.ts ModuleBlocks).
declare module '../../config/schema.ts' {
  interface ModuleBlocks extends BlockOf<typeof tencentPushConfigShape> {}
}
