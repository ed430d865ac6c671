import type { LedgerRow } from '../ledger/types.ts';
import type { ChannelOutcome, DeliveryChannel, SendContext } from './types.ts';

/**
 * One channel made of one sender per app (its own Tencent account, UserSig, quota and pacer), picked by the row's
 * app_code, so a storm in one app never slows another and no row goes out through another app's account. A row of
 * an app without a sender is refused here too (the delivery core refuses it first: UNKNOWN_APP).
 */
export function perAppChannel(name: string, byApp: ReadonlyMap<string, DeliveryChannel>): DeliveryChannel {
  const unknown = (row: LedgerRow): ChannelOutcome => ({
    kind: 'permanent',
    code: 'UNKNOWN_APP',
    message: `no ${name} sender for app_code "${row.appCode}"`,
    latencyMs: 0,
  });
  return {
    name,
    send: (row: LedgerRow, ctx: SendContext) => byApp.get(row.appCode)?.send(row, ctx) ?? Promise.resolve(unknown(row)),
    async onRateLimited(row: LedgerRow): Promise<number> {
      return (await byApp.get(row.appCode)?.onRateLimited?.(row)) ?? 1;
    },
    // Only a channel whose senders can take a notice back offers to (a push cannot).
    ...([...byApp.values()].some((c) => c.withdraw)
      ? {
          async withdraw(row: LedgerRow) {
            const channel = byApp.get(row.appCode);
            if (!channel?.withdraw) return { kind: 'permanent', code: 'UNKNOWN_APP', message: `no ${name} sender for app_code "${row.appCode}"` } as const;
            return channel.withdraw(row);
          },
        }
      : {}),
    async close() {
      await Promise.all([...byApp.values()].map((c) => c.close?.()));
    },
  };
}
