import type { DeliveryChannel } from '../../channels/types.ts';
import type { LedgerRow } from '../../ledger/types.ts';

/**
 * Around any channel: a notice older than its kind's limit (deliver.expire_after, from the fact's commit time) is
 * finished as expired when its turn comes, without a send — after an outage, a two-hour-old "you were kicked" is
 * worth less than nothing. A channel that keeps history (the inbox) may still take it. A notice within its limit is
 * sent with the time it has left, so a provider's offline storage never outlives it.
 */
export function expireStale(
  channel: DeliveryChannel,
  decide: { limitMs(noticeKind: string): number | null; keeps(noticeKind: string): boolean; now?: () => number },
): DeliveryChannel {
  const now = decide.now ?? Date.now;
  return {
    ...channel,
    async send(row: LedgerRow, ctx) {
      const limitMs = decide.limitMs(row.noticeKind);
      if (limitMs === null) return channel.send(row, ctx);
      const committedAtMs = row.sourceCreatedAtMs ?? row.createdAtMs;
      const ageMs = now() - committedAtMs;
      if (ageMs > limitMs && !decide.keeps(row.noticeKind)) return { kind: 'expired', ageMs, limitMs };
      return channel.send(row, { ...ctx, expiresAtMs: committedAtMs + limitMs });
    },
  };
}
