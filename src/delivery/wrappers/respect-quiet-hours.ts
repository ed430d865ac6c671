import type { DeliveryChannel } from '../../channels/types.ts';
import { localClock, quietUntil, type QuietHours } from '../../quiet-hours/window.ts';

/**
 * Around a channel: during the user's quiet hours a notice waits (`defer`: the row is deferred in the ledger until
 * the window ends, then decided again) or ends (`drop`: suppressed, reason quiet_hours), per the channel's policy. A
 * channel without a policy sends at once, and one whose messages can buzz the phone (C2C) sends silently. Mandatory
 * kinds are never held. The users' settings are one batched read per claim batch (UserSettingsLookup), shared by both wrappers.
 */
export function respectQuietHours(
  channel: DeliveryChannel,
  decide: {
    policy: 'defer' | 'drop' | null;
    /** This channel's messages carry a phone notification that quiet hours should silence (C2C's OfflinePushInfo). */
    silenceable: boolean;
    mandatory(noticeKind: string): boolean;
    hoursOf(appCode: string, userId: string): Promise<QuietHours | null>;
    now?: () => number;
  },
): DeliveryChannel {
  if (decide.policy === null && !decide.silenceable) return channel;
  const now = decide.now ?? Date.now;
  return {
    ...channel,
    async send(row, ctx) {
      if (decide.mandatory(row.noticeKind)) return channel.send(row, ctx);
      const hours = ctx.settings ? ctx.settings.quietHours : await decide.hoursOf(row.appCode, row.userId);
      const until = hours ? quietUntil(now(), hours) : null;
      if (until === null || !hours) return channel.send(row, ctx);
      const moment = localClock(until, hours.timeZone);
      if (decide.policy === 'defer') return { kind: 'deferred', reason: 'quiet_hours', untilMs: until, detail: `deferred until ${moment} (quiet hours)` };
      if (decide.policy === 'drop') return { kind: 'suppressed', reason: 'quiet_hours', detail: `dropped: the user's quiet hours last until ${moment}` };
      return channel.send(row, { ...ctx, silencePush: true });
    },
  };
}
