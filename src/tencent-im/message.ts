import { createHash } from 'node:crypto';
import type { OfflinePushInfo } from './offline-push.ts';

/** Tencent's limit for one message: the sum of its element fields. */
export const MAX_MESSAGE_BYTES = 12 * 1024;

export interface C2CNotice {
  toAccount: string;
  /** TIMCustomElem.Ext: the notice kind the client switches on (wallet_notice, vip_notice, room_notice). */
  ext: string;
  /** TIMCustomElem.Data: the client payload, JSON text, sent byte for byte as stored. */
  data: string;
  /** Stable per logical message, so every retry hits Tencent's 120 s duplicate filter. */
  dedupSeed: string;
  /** The phone notification Tencent sends when the user is offline (PushFlag 1: none). */
  offlinePush?: OfflinePushInfo;
  /** How long Tencent may keep it for an offline user, when shorter than tencent_im.msg_lifetime (the notice's remaining life). */
  lifeTimeMs?: number;
}

export function messageBytes(data: string, ext: string): number {
  return Buffer.byteLength(data, 'utf8') + Buffer.byteLength(ext, 'utf8');
}

/** MsgRandom and MsgSeq derived from the ledger key: identical on every retry of one event. */
export function dedupNumbers(seed: string): { msgRandom: number; msgSeq: number } {
  const digest = createHash('sha256').update(seed).digest();
  return { msgRandom: digest.readUInt32BE(0), msgSeq: digest.readUInt32BE(4) };
}

export function buildSendMsgBody(notice: C2CNotice, msgLifeTimeSeconds: number): Record<string, unknown> {
  const { msgRandom, msgSeq } = dedupNumbers(notice.dedupSeed);
  return {
    SyncOtherMachine: 2,
    To_Account: notice.toAccount,
    MsgLifeTime: msgLifeTimeSeconds,
    MsgSeq: msgSeq,
    MsgRandom: msgRandom,
    MsgBody: [{ MsgType: 'TIMCustomElem', MsgContent: { Data: notice.data, Ext: notice.ext } }],
    ...(notice.offlinePush ? { OfflinePushInfo: notice.offlinePush } : {}),
  };
}
