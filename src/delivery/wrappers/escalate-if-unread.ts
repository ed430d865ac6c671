import type { DeliveryChannel, ItemReadState } from '../../channels/types.ts';
import type { LedgerKey } from '../../ledger/types.ts';

/**
 * Around a channel (the push): a kind with an escalate_after waits that long after its fact's commit (deferred in
 * the ledger), then goes only if the fact's inbox item is still unread; read, archived or deleted first, it ends
 * `skipped_read` with no call. An item not written yet counts as unread: the user has not seen it.
 */
export function escalateIfUnread(
  channel: DeliveryChannel,
  decide: { afterMs(noticeKind: string): number | null; stateOf(fact: Omit<LedgerKey, 'channel'>): Promise<ItemReadState>; now?: () => number },
): DeliveryChannel {
  const now = decide.now ?? Date.now;
  return {
    ...channel,
    async send(row, ctx) {
      const afterMs = decide.afterMs(row.noticeKind);
      if (afterMs === null) return channel.send(row, ctx);
      const dueMs = (row.sourceCreatedAtMs ?? row.createdAtMs) + afterMs;
      if (now() < dueMs)
        return {
          kind: 'deferred',
          reason: 'escalate',
          untilMs: dueMs,
          detail: `held for escalate_after (${Math.round(afterMs / 1000)} s): pushed then only if the inbox item is still unread`,
        };
      const state = await decide.stateOf(row);
      if (state === 'read') return { kind: 'skipped_read', detail: 'the inbox item was read (or archived) before escalate_after' };
      if (state === 'gone') return { kind: 'skipped_read', detail: 'the inbox item was deleted before escalate_after' };
      return channel.send(row, ctx);
    },
  };
}
