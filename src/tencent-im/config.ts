import type { BlockOf } from '../config/schema.ts';
import { z } from 'zod';
import { durationMs } from '../config/duration.ts';
import { kindList } from '../config/primitives.ts';

/** One app_code's own Tencent IM app: its account, key, and (optionally) its own quota and endpoint. */
export const tencentApp = z.strictObject({
  sdk_app_id: z.number().int().positive(),
  /** From the environment (`${TENCENT_IM_SECRET_KEY_HALA}`), never in the file. */
  secret_key: z.string().min(1, 'required (from the environment, e.g. ${TENCENT_IM_SECRET_KEY_<APP>})'),
  admin_identifier: z.string().min(1).optional(),
  /** sendmsg requests per second for this app (default tencent_im.rate_limit_per_second). */
  rate_limit_per_second: z.number().int().min(0).optional(),
  /** timpush/batch calls per second for this app (default tencent_push.rate_limit_per_second). */
  push_rate_limit_per_second: z.number().int().min(0).optional(),
  base_url: z.url().optional(),
});
export type TencentAppConfig = z.infer<typeof tencentApp>;

/** Its key in each app's entry: `apps.<app_code>.tencent_im`. */
export const tencentImAppShape = { tencent_im: tencentApp.optional() };

/** Tencent IM REST API (sendmsg) settings shared by every app; each app's account and key are under apps.<app_code>.tencent_im. */
export const tencentIm = z.strictObject({
  enabled: z.boolean().default(false),
  base_url: z.url().default('https://console.tim.qq.com'),
  admin_identifier: z.string().min(1).default('administrator'),
  request_timeout: durationMs.default(3000),
  /**
   * A kept-alive connection idle this long is closed by us, before a proxy or NAT on the way drops it silently: a
   * request written into a dropped connection is reset unanswered and, for a push, could not be told from one that
   * arrived. Keep it below every idle timeout between here and Tencent.
   */
  idle_socket_timeout: durationMs.default(4000),
  rate_limit_per_second: z.number().int().min(0).default(200),
  /** Lifetime of the cached admin UserSig; it is re-minted well before it runs out. */
  usersig_ttl: durationMs.default(24 * 3600 * 1000),
  /** Offline storage time of a notice (MsgLifeTime); Tencent caps it at 7 days. */
  msg_lifetime: durationMs.default(7 * 24 * 3600 * 1000),
  /** The notice kinds sent as C2C messages; `["*"]` is every kind. */
  kinds: kindList.default(() => ['*']),
});
export type TencentImConfig = z.infer<typeof tencentIm>;

const pushTemplate = z.strictObject({ title: z.string().min(1).max(500), body: z.string().min(1).max(2000) });

/**
 * The phone notification a notice becomes: on the C2C message (OfflinePushInfo, pushed by Tencent when the user is
 * offline) and on the tencent_push channel. Templates are per event type or notice kind, then per language.
 */
export const offlinePush = z.strictObject({
  /** Kinds whose C2C message carries PushFlag 1 (no phone notification): balance updates are state, not news. */
  no_push_kinds: z.array(z.string()).default(() => ['wallet_notice']),
  /** `{{field}}` is the payload's field (or its `params` field). */
  templates: z.record(z.string().min(1), z.record(z.string().min(1), pushTemplate)).default(() => ({
    vip_notice: {
      en: { title: 'VIP {{vip_name}}', body: 'Your VIP level is now {{level}}.' },
      zh: { title: 'VIP {{vip_name}}', body: '你的 VIP 等级已变为 {{level}}。' },
    },
    activity_notice: { en: { title: 'Activity', body: 'You have a new activity notice.' }, zh: { title: '活动', body: '你有一条新的活动通知。' } },
    room_notice: { en: { title: 'Room', body: 'You have a new room notice.' }, zh: { title: '房间', body: '你有一条新的房间通知。' } },
  })),
  /** The payload field that names the user's language, when the owner service sends one. */
  language_field: z.string().min(1).default('language'),
  default_language: z.string().min(1).default('en'),
  /** Vendor classes for private messages (keeps notices out of marketing quotas); see docs/how-it-works.md, "Phone pushes". */
  vendor: z
    .strictObject({
      huawei_category: z.string().default('IM'),
      huawei_importance: z.enum(['LOW', 'NORMAL']).default('NORMAL'),
      honor_importance: z.enum(['LOW', 'NORMAL']).default('NORMAL'),
      oppo_category: z.string().default('IM'),
      vivo_classification: z.union([z.literal(0), z.literal(1)]).default(1),
      vivo_category: z.string().default('IM'),
      meizu_notice_msg_type: z.union([z.literal(0), z.literal(1)]).default(1),
      xiaomi_channel_id: z.string().default(''),
      huawei_channel_id: z.string().default(''),
      oppo_channel_id: z.string().default(''),
      google_channel_id: z.string().default(''),
    })
    .default(() => ({
      huawei_category: 'IM',
      huawei_importance: 'NORMAL' as const,
      honor_importance: 'NORMAL' as const,
      oppo_category: 'IM',
      vivo_classification: 1 as const,
      vivo_category: 'IM',
      meizu_notice_msg_type: 1 as const,
      xiaomi_channel_id: '',
      huawei_channel_id: '',
      oppo_channel_id: '',
      google_channel_id: '',
    })),
});
export type OfflinePushConfig = z.infer<typeof offlinePush>;

/** The Tencent IM account (tencent_im) and the phone notification a notice becomes (offline_push): C2C's YAML, read by push too. */
export const tencentImConfigShape = {
  tencent_im: tencentIm.default(() => tencentIm.parse({})),
  offline_push: offlinePush.default(() => offlinePush.parse({})),
};

// The core's config type lists this block without importing this module (src/config/schema.ts ModuleBlocks).
declare module '../config/schema.ts' {
  interface ModuleBlocks extends BlockOf<typeof tencentImConfigShape> {}
  interface AppBlocks extends BlockOf<typeof tencentImAppShape> {}
}
