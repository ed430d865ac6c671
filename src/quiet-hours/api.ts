import { z } from 'zod';
import { ownerOf, PreferenceRequestError } from '../preferences/caller.ts';
import type { QuietHoursStore } from './store.ts';
import { quietHoursSchema } from './window.ts';

const setRequest = z.object({ caller: z.unknown(), quiet_hours: quietHoursSchema });

/** GetQuietHours / SetQuietHours of PreferencesService: the caller's own, validated (zone and times) before stored. */
export function quietHoursHandlers(store: QuietHoursStore, now: () => number = Date.now) {
  const present = async (owner: { appCode: string; userId: string }) => {
    const hours = await store.get(owner.appCode, owner.userId);
    return { time_zone: hours?.timeZone ?? '', windows: hours?.windows ?? [] };
  };
  return {
    async GetQuietHours(request: { caller?: unknown }) {
      return present(ownerOf(request.caller));
    },
    async SetQuietHours(request: unknown) {
      const owner = ownerOf((request as { caller?: unknown } | null)?.caller);
      const parsed = setRequest.safeParse(request);
      if (!parsed.success)
        throw new PreferenceRequestError(parsed.error.issues.map((i) => `${['quiet_hours', ...i.path.slice(1)].join('.')}: ${i.message}`).join('; '));
      const { time_zone: timeZone, windows } = parsed.data.quiet_hours;
      await store.set(owner.appCode, owner.userId, { timeZone, windows }, now());
      return present(owner);
    },
  };
}
