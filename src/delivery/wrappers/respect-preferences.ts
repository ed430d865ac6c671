import type { DeliveryChannel } from '../../channels/types.ts';

/**
 * Around any channel: a notice the user turned off for this channel (PreferencesService) ends `suppressed`, reason
 * `preference`, without a send — unless its kind is mandatory. One batched look-up per claim batch. The C2C channel
 * also learns whether the user turned the phone push of this kind off, so its offline push is silenced too.
 */
export function respectPreferences(
  channel: DeliveryChannel,
  decide: {
    mandatory(noticeKind: string): boolean;
    isOff(key: { appCode: string; userId: string; noticeKind: string; channel: string }): Promise<boolean>;
    /** The channel whose opt-out also silences this channel's own phone notification (push, for C2C), if any. */
    silencedBy?: string;
  },
): DeliveryChannel {
  return {
    ...channel,
    async send(row, ctx) {
      if (decide.mandatory(row.noticeKind)) return channel.send(row, ctx);
      const base = { appCode: row.appCode, userId: row.userId, noticeKind: row.noticeKind };
      const [off, pushOff] = await Promise.all([
        decide.isOff({ ...base, channel: channel.name }),
        decide.silencedBy ? decide.isOff({ ...base, channel: decide.silencedBy }) : Promise.resolve(false),
      ]);
      if (off) return { kind: 'suppressed', reason: 'preference', detail: `the user turned ${row.noticeKind} off on ${channel.name}` };
      return channel.send(row, pushOff ? { ...ctx, silencePush: true } : ctx);
    },
  };
}
