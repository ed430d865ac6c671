import type { LedgerRow } from '../../ledger/types.ts';
import type { DeliveryChannel } from '../../channels/types.ts';

/**
 * Around any channel: a notice a newer version makes obsolete (a newer balance of the same asset is sent or on its
 * way) is finished as superseded without a send or any quota. Checked when its turn comes, never waited for.
 */
export function skipSuperseded(
  channel: DeliveryChannel,
  decide: { skips(eventType: string): boolean; newerVersion(row: LedgerRow): Promise<string | null> },
): DeliveryChannel {
  return {
    ...channel,
    async send(row, ctx) {
      if (row.supersedeKey && decide.skips(row.eventType)) {
        const newer = await decide.newerVersion(row);
        if (newer !== null) return { kind: 'superseded', newerEventId: newer };
      }
      return channel.send(row, ctx);
    },
  };
}
