import type { OfflinePushConfig } from './config.ts';
import { withoutControlChars } from '../platform/text.ts';

/** Tencent's `OfflinePushInfo` as notice-service sends it (on sendmsg and on timpush/batch). */
export interface OfflinePushInfo {
  PushFlag: 0 | 1;
  Title?: string;
  Desc?: string;
  /** A JSON string: some Android vendors drop a push whose Ext is not JSON. */
  Ext?: string;
  AndroidInfo?: Record<string, string | number>;
  ApnsInfo?: Record<string, string | number>;
}

/** The longest a title and a body may be before the 12 KB message limit is even considered (vendors cut earlier). */
const MAX_TITLE_CHARS = 100;
const MAX_BODY_CHARS = 400;

/** Replaces `{{field}}` with the payload's field (top level, then `params`); a missing field renders empty. */
function renderTemplate(template: string, payload: Record<string, unknown>): string {
  const params = (payload.params && typeof payload.params === 'object' ? payload.params : {}) as Record<string, unknown>;
  return template.replace(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g, (_, field: string) => {
    // Own keys only: `{{constructor}}` must not reach Object.prototype.
    const value = Object.hasOwn(payload, field) ? payload[field] : Object.hasOwn(params, field) ? params[field] : undefined;
    return value === undefined || value === null || typeof value === 'object' ? '' : String(value);
  });
}

/** The template for an event: its event type's, else its notice kind's; in the user's language, else the default. */
export function templateFor(
  config: OfflinePushConfig,
  eventType: string,
  noticeKind: string,
  payload: Record<string, unknown>,
): { title: string; body: string } | null {
  // Own keys only: a payload language of "constructor" (or an event type "toString") is just not found.
  const own = <T>(record: Record<string, T>, key: unknown): T | undefined => (typeof key === 'string' && Object.hasOwn(record, key) ? record[key] : undefined);
  const byLanguage = own(config.templates, eventType) ?? own(config.templates, noticeKind);
  if (!byLanguage) return null;
  return own(byLanguage, payload[config.language_field]) ?? own(byLanguage, config.default_language) ?? Object.values(byLanguage)[0] ?? null;
}

/**
 * The vendor fields that keep a private notice in the IM / private-message class, out of the marketing throttles
 * (2 a day per device on Huawei, Honor and OPPO for marketing). Empty values are left out.
 */
function vendorFields(config: OfflinePushConfig): Pick<OfflinePushInfo, 'AndroidInfo' | 'ApnsInfo'> {
  const v = config.vendor;
  const android: Record<string, string | number> = {
    HuaWeiCategory: v.huawei_category,
    HuaWeiImportance: v.huawei_importance,
    HonorImportance: v.honor_importance,
    OPPOCategory: v.oppo_category,
    VIVOClassification: v.vivo_classification,
    VIVOCategory: v.vivo_category,
    MeiZuNoticeMsgType: v.meizu_notice_msg_type,
    ...(v.xiaomi_channel_id ? { XiaoMiChannelID: v.xiaomi_channel_id } : {}),
    ...(v.huawei_channel_id ? { HuaWeiChannelID: v.huawei_channel_id } : {}),
    ...(v.oppo_channel_id ? { OPPOChannelID: v.oppo_channel_id } : {}),
    ...(v.google_channel_id ? { GoogleChannelID: v.google_channel_id } : {}),
  };
  return { AndroidInfo: android, ApnsInfo: { BadgeMode: 1 } };
}

export type RenderedPush = { push: true; info: OfflinePushInfo } | { push: false; reason: string };

/**
 * The phone notification for one notice, or why there is none. Pure: the same row and config always give the same
 * push, so identical pushes (one SystemNotice to many users) can share one timpush/batch call.
 */
export function renderOfflinePush(
  config: OfflinePushConfig,
  row: { eventType: string; noticeKind: string; sourceEventId: string; payload: string | null },
): RenderedPush {
  if (config.no_push_kinds.includes(row.noticeKind)) return { push: false, reason: `${row.noticeKind} is in offline_push.no_push_kinds` };
  let payload: Record<string, unknown>;
  try {
    const parsed = JSON.parse(row.payload ?? '');
    payload = parsed && typeof parsed === 'object' ? parsed : {};
  } catch {
    return { push: false, reason: 'payload is not JSON' };
  }
  const template = templateFor(config, row.eventType, row.noticeKind, payload);
  if (!template) return { push: false, reason: `no offline_push.templates entry for ${row.eventType} or ${row.noticeKind}` };
  // Payload text reaches a lock screen: no control characters or bidi overrides (U+202E reverses what follows).
  const title = clip(withoutControlChars(renderTemplate(template.title, payload)), MAX_TITLE_CHARS);
  const body = clip(withoutControlChars(renderTemplate(template.body, payload)), MAX_BODY_CHARS);
  // Ext tells the app what to open; the event id is per user, so it stays out to keep identical pushes identical.
  const ext = JSON.stringify({ kind: row.noticeKind, event_type: row.eventType });
  return { push: true, info: { PushFlag: 0, Title: title, Desc: body, Ext: ext, ...vendorFields(config) } };
}

/** A digest summary: the newest notice's push, its title prefixed with how many it stands for, the count in Ext. */
export function withDigestCount(info: OfflinePushInfo, count: number): OfflinePushInfo {
  const ext = JSON.parse(info.Ext ?? '{}') as Record<string, unknown>;
  return { ...info, Title: clip(`(${count}) ${info.Title ?? ''}`, MAX_TITLE_CHARS), Ext: JSON.stringify({ ...ext, digest_count: count }) };
}

/**
 * The OfflinePushInfo a C2C notice carries: none (PushFlag 1) for kinds that must not push and for kinds the
 * tencent_push channel already pushes (one notification, not two); the rendered push, fitted into the message's
 * 12 KB, for kinds with a template; nothing for the rest (a lone TIMCustomElem without Desc pushes nothing).
 */
export function c2cOfflinePush(
  config: OfflinePushConfig,
  row: { eventType: string; noticeKind: string; sourceEventId: string; payload: string | null },
  pushedByPushChannel: boolean,
  messageBytes: number,
  limitBytes: number,
): OfflinePushInfo | undefined {
  if (pushedByPushChannel || config.no_push_kinds.includes(row.noticeKind)) return { PushFlag: 1 };
  const rendered = renderOfflinePush(config, row);
  return rendered.push ? fitOfflinePush(rendered.info, messageBytes, limitBytes) : undefined;
}

/** Bytes an OfflinePushInfo adds to a message, as Tencent counts its text fields. */
export function offlinePushBytes(info: OfflinePushInfo): number {
  return Buffer.byteLength(info.Title ?? '') + Buffer.byteLength(info.Desc ?? '') + Buffer.byteLength(info.Ext ?? '');
}

/**
 * Fits the push into what the message leaves of `limitBytes`: the body is shortened first, then the title; if even
 * that does not fit, the message goes without a push (PushFlag 1). The notice itself is never dropped for its push.
 */
export function fitOfflinePush(info: OfflinePushInfo, messageBytes: number, limitBytes: number): OfflinePushInfo {
  let room = limitBytes - messageBytes - Buffer.byteLength(info.Ext ?? '');
  if (room <= 0) return { PushFlag: 1 };
  const title = clipBytes(info.Title ?? '', Math.min(Buffer.byteLength(info.Title ?? ''), Math.floor(room / 2)));
  room -= Buffer.byteLength(title);
  const desc = clipBytes(info.Desc ?? '', room);
  return { ...info, Title: title, Desc: desc };
}

function clip(text: string, chars: number): string {
  const points = [...text];
  return points.length <= chars ? text : `${points.slice(0, chars - 1).join('')}…`;
}

/** The longest prefix of whole characters within `bytes` UTF-8 bytes, with an ellipsis when it was cut. */
function clipBytes(text: string, bytes: number): string {
  if (Buffer.byteLength(text) <= bytes) return text;
  const ellipsis = '…';
  let out = '';
  for (const ch of text) {
    if (Buffer.byteLength(out + ch + ellipsis) > bytes) break;
    out += ch;
  }
  return bytes >= Buffer.byteLength(ellipsis) ? out + ellipsis : '';
}
