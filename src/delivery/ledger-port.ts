import type { LedgerRepository } from '../ledger/repository.ts';
import type { BatchedLedger } from '../ledger/batched-ledger.ts';
import { formatKey } from '../ledger/types.ts';
import type { DeliveryLedger } from './deliver-once.ts';
import type { ChannelLedger } from '../channels/types.ts';

/**
 * The ledger as the delivery core and the channels see it, for one worker: hot writes (claim, delivered,
 * superseded) go through the group-committing BatchedLedger, the rest straight to the repository.
 */
export function deliveryLedger(hot: BatchedLedger, ledger: LedgerRepository, workerId: string): DeliveryLedger {
  return {
    claim: (key, options) => hot.claim(key, options),
    recordDelivered: (key, ref) => hot.recordDelivered(key, ref),
    recordSuperseded: (key, newer) => hot.recordSuperseded(key, newer),
    recordExpired: (key, reason, at) => ledger.recordExpired(key, workerId, reason, at),
    recordSuppressed: (key, reason, detail, at) => ledger.recordSuppressed(key, workerId, reason, detail, at),
    recordFailed: (key, code, message, at) => ledger.recordFailed(key, workerId, code, message, at),
    recordUnconfirmed: (key, ref, code, message, at) => ledger.recordUnconfirmed(key, workerId, ref, code, message, at),
    recordRetryable: (key, code, message, retryAt, at) => ledger.recordRetryable(key, workerId, code, message, retryAt, at),
    recordDigested: (key, detail, at) => ledger.recordDigested(key, workerId, detail, at),
    recordSkippedRead: (key, detail, at) => ledger.recordSkippedRead(key, workerId, detail, at),
    recordDeferred: (key, reason, detail, dueAt, at) => ledger.recordDeferred(key, workerId, reason, detail, dueAt, at),
    release: (key, code, message, retryAt, at) => ledger.releaseRateLimited(key, workerId, code, message, retryAt, at),
  };
}

export function channelLedger(ledger: LedgerRepository): ChannelLedger {
  return {
    async markAttemptStarted(rows, ref) {
      // Every row of a call was claimed by this process, so they share one lock holder.
      const marked = new Set((await ledger.markSending(rows, rows[0]?.lockedBy ?? '', ref, Date.now())).map(formatKey));
      return rows.filter((r) => marked.has(formatKey(r)));
    },
    recentSends: (appCode, userId, channel, sinceMs) => ledger.recentSends(appCode, userId, channel, sinceMs),
  };
}
