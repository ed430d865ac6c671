import type { DeliveryChannel } from '../../channels/types.ts';
import { choiceKey, type UserSettings } from '../user-settings.ts';

/**
 * Around any channel: a notice the user turned off for this channel (PreferencesService) ends `suppressed`, reason
 * `preference`, without a send — unless its kind is mandatory. The users' settings are one batched read per claim batch (UserSettingsLookup), shared
 * by both wrappers. The C2C channel
 * also learns whether the user turned the phone push of this kind off, so its offline push is silenced too.
 */
export function respectPreferences(
  channel: DeliveryChannel,
  decide: {
    mandatory(noticeKind: string): boolean;
    /** The user's settings (one batched read per claim batch, passed on to the wrappers inside). */
    settingsOf(appCode: string, userId: string): Promise<UserSettings>;
    /** The channel whose opt-out also silences this channel's own phone notification (push, for C2C), if any. */
    silencedBy?: string;
  },
): DeliveryChannel {
  return {
    ...channel,
    async send(row, ctx) {
      if (decide.mandatory(row.noticeKind)) return channel.send(row, ctx);
      const settings = await decide.settingsOf(row.appCode, row.userId);
      if (settings.off.has(choiceKey(row.noticeKind, channel.name)))
        return { kind: 'suppressed', reason: 'preference', detail: `the user turned ${row.noticeKind} off on ${channel.name}` };
      const pushOff = decide.silencedBy !== undefined && settings.off.has(choiceKey(row.noticeKind, decide.silencedBy));
      return channel.send(row, { ...ctx, settings, ...(pushOff ? { silencePush: true } : {}) });
    },
  };
}
