import { CHANNEL_TENCENT_IM_C2C, formatKey, type LedgerRow } from '../../ledger/types.ts';
import type { NoticeMetrics } from '../../observability/metrics.ts';
import type { TencentImSender } from '../../tencent-im/client.ts';
import type { OfflinePushInfo } from '../../tencent-im/offline-push.ts';
import { MAX_MESSAGE_BYTES, messageBytes } from '../../tencent-im/message.ts';
import type { ChannelOutcome, DeliveryChannel, SendContext } from '../types.ts';
import type { SendPacer } from '../../tencent-im/send-pacer.ts';
import { slotWithinLock } from '../../delivery/send-helpers/slot-within-lock.ts';

export { CHANNEL_TENCENT_IM_C2C };

export interface TencentImC2CDeps {
  /** The app_code whose Tencent app this sender is (a metric label; the apps list bounds it). */
  app: string;
  sender: TencentImSender;
  /** The app-wide send rate (SendPacer): waits for this send's slot, and backs every process off on over-frequency. */
  pacer: Pick<SendPacer, 'acquire' | 'overFrequency'>;
  /** How far ahead of its commit time a notice of this kind queues for the quota (deliver.priority). */
  priorityLeadMs(noticeKind: string): number;
  /** The longest one send can take (the HTTP timeout): a send must end within the ledger lock it holds. */
  sendTimeoutMs: number;
  /** The notice's OfflinePushInfo (see c2cOfflinePush), or none. */
  offlinePush?(row: LedgerRow): OfflinePushInfo | undefined;
  metrics?: NoticeMetrics;
  now?: () => number;
}

/**
 * Tencent IM C2C: a TIMCustomElem message per notice, within the app's sendmsg quota. Obsolete balances are finished
 * without a request; the quota is handed out oldest-first (with each kind's priority lead) across deliver processes.
 */
export function tencentImC2CChannel(deps: TencentImC2CDeps): DeliveryChannel {
  const now = deps.now ?? Date.now;
  return {
    name: CHANNEL_TENCENT_IM_C2C,

    async send(row: LedgerRow, ctx: SendContext): Promise<ChannelOutcome> {
      // IM's own limit, checked before any quota is spent: the other channels of the fact are not bound by it.
      const bytes = messageBytes(row.payload ?? '', row.noticeKind);
      if (bytes > MAX_MESSAGE_BYTES)
        return { kind: 'permanent', code: 'TOO_LARGE', message: `payload too large for one IM message: ${bytes} bytes > ${MAX_MESSAGE_BYTES}`, latencyMs: 0 };
      // The slot comes after the claim, so nothing with a variable delay (a statement) stands between slot and send.
      // Slots go to the oldest waiting events first, across deliver processes (SendPacer.acquire). A kind's priority
      // lead makes it older than it is, so it goes before other kinds' notices up to that much older.
      const age = (row.sourceCreatedAtMs ?? row.createdAtMs) - deps.priorityLeadMs(row.noticeKind);
      const slot = await slotWithinLock(deps.pacer, { lockUntilMs: ctx.lockUntilMs, sendTimeoutMs: deps.sendTimeoutMs, ageMs: age, now });
      if (!slot.fits(ctx.lockUntilMs)) {
        return { kind: 'not_now', code: 'SEND_SLOT_WAIT', message: 'no send slot within the ledger lock', retryAtMs: slot.retryAtMs };
      }
      deps.metrics?.sendSlotWait.observe({ channel: CHANNEL_TENCENT_IM_C2C, app: deps.app }, (slot.atMs - slot.askedAtMs) / 1000);
      const sent = await deps.sender.sendC2C({
        toAccount: row.userId,
        ext: row.noticeKind,
        data: row.payload ?? '',
        dedupSeed: formatKey(row),
        // The user turned this kind's phone push off: the message must not buzz the phone either.
        offlinePush: ctx.silencePush ? { PushFlag: 1 } : deps.offlinePush?.(row),
        // Tencent keeps it for an offline user no longer than the notice is worth (deliver.expire_after).
        ...(ctx.expiresAtMs ? { lifeTimeMs: Math.max(1000, ctx.expiresAtMs - now()) } : {}),
      });
      return sent.kind === 'delivered' ? { kind: 'delivered', ref: sent.msgKey, latencyMs: sent.latencyMs } : sent;
    },

    async onRateLimited(): Promise<number> {
      // Over-frequency is the provider's whole-app limit: every sender slows a little (the pacer's shared pace).
      const pace = await deps.pacer.overFrequency();
      deps.metrics?.sendPace.set({ channel: CHANNEL_TENCENT_IM_C2C, app: deps.app }, pace);
      return pace;
    },

    async withdraw(row: LedgerRow) {
      if (!row.providerRef || !deps.sender.withdraw)
        return { kind: 'permanent', code: 'NO_MSG_KEY', message: 'no MsgKey was recorded for this message' } as const;
      const answer = await deps.sender.withdraw(row.userId, row.providerRef);
      return answer.kind === 'withdrawn' ? { kind: 'withdrawn', note: `C2C message ${row.providerRef} withdrawn (admin_msgwithdraw)` } : answer;
    },

    close: () => deps.sender.close(),
  };
}
