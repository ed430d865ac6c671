import type { DeliveryChannel } from '../../channels/types.ts';
import type { DigestRule, DigestStep } from '../../digests/store.ts';
import type { LedgerRow } from '../../ledger/types.ts';

/** A digest key per room: the payload's room_id (notices without one share the key ''). */
export function roomOf(payload: string | null): string {
  try {
    const room = (JSON.parse(payload ?? '') as { room_id?: unknown }).room_id;
    return typeof room === 'string' || typeof room === 'number' ? String(room).slice(0, 128) : '';
  } catch {
    return '';
  }
}

/**
 * Around a channel (the push): notices of one user and kind (and key, e.g. a room) within a digest window become one
 * summary. The window's leader waits in the ledger until it closes, then sends the newest notice with the count; the
 * others end `digested`. A row that was already in a provider call (provider_ref set) is left to the channel, so a
 * push that may have reached the phone is never summarised again.
 */
export function gatherDigest(
  channel: DeliveryChannel,
  decide: {
    ruleFor(noticeKind: string): (DigestRule & { keyOf(payload: string | null): string }) | null;
    step(row: LedgerRow, digestKey: string, rule: DigestRule, nowMs: number): Promise<DigestStep>;
    now?: () => number;
  },
): DeliveryChannel {
  const now = decide.now ?? Date.now;
  return {
    ...channel,
    async send(row, ctx) {
      const rule = decide.ruleFor(row.noticeKind);
      if (!rule || row.providerRef !== null) return channel.send(row, ctx);
      const step = await decide.step(row, rule.keyOf(row.payload), rule, now());
      switch (step.step) {
        case 'send_alone':
          return channel.send(row, ctx);
        case 'lead':
          return {
            kind: 'deferred',
            reason: 'digest',
            untilMs: step.untilMs,
            detail: `leads a digest of ${row.noticeKind}: sends one summary when the window closes`,
          };
        case 'joined':
          return { kind: 'digested', detail: `counted in the digest summary sent by ${step.leaderEventId}` };
        case 'summarize':
          // The leader's own key and lock; the newest notice's text, with the count.
          return channel.send({ ...row, eventType: step.newest.eventType, payload: step.newest.payload }, { ...ctx, digestCount: step.count });
      }
    },
  };
}
