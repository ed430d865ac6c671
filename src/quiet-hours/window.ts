import { DateTime, IANAZone } from 'luxon';
import { z } from 'zod';

/** A daily window in the user's zone: "HH:MM" or "HH:MM:SS"; end before start runs overnight; start = end is none. */
export interface QuietWindow {
  start: string;
  end: string;
}

export interface QuietHours {
  timeZone: string;
  windows: readonly QuietWindow[];
}

const clock = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d)?$/, 'must be HH:MM or HH:MM:SS (00:00 to 23:59:59)');

/** Quiet hours as the API and the store accept them: a zone Intl knows and at most four windows. */
export const quietHoursSchema = z.object({
  time_zone: z.string().refine((zone) => IANAZone.isValidZone(zone), { error: 'must be an IANA time zone such as Asia/Shanghai' }),
  windows: z.array(z.object({ start: clock, end: clock })).max(4, 'at most 4 windows'),
});

function at(day: DateTime, time: string): DateTime {
  const [hour, minute, second = 0] = time.split(':').map(Number) as [number, number, number?];
  // A local time skipped by a DST change moves forward by the gap (02:30 → 03:30), as Temporal's "compatible" rule.
  return day.set({ hour, minute, second, millisecond: 0 });
}

/** The stretches of one window that start the day before `now`'s local day, on it, or the day after. */
function stretches(now: DateTime, w: QuietWindow): Array<[number, number]> {
  if (w.start === w.end) return [];
  const today = now.startOf('day');
  return [-1, 0, 1].map((offset) => {
    const day = today.plus({ days: offset });
    const start = at(day, w.start);
    const end = w.end > w.start ? at(day, w.end) : at(day.plus({ days: 1 }), w.end);
    return [start.toMillis(), end.toMillis()];
  });
}

/**
 * When the quiet period that `nowMs` falls in ends (epoch ms), or null when it is not quiet. Windows that touch or
 * overlap chain into one period. Pure: the zone's rules come from Intl (luxon), so DST nights are as long as they are.
 */
export function quietUntil(nowMs: number, hours: QuietHours): number | null {
  const now = DateTime.fromMillis(nowMs, { zone: hours.timeZone });
  if (!now.isValid) return null;
  const all = hours.windows.flatMap((w) => stretches(now, w));
  let until: number | null = null;
  let probe = nowMs;
  // Follow the chain: a window ending inside (or exactly at the start of) another continues the quiet.
  for (let guard = 0; guard < all.length + 1; guard++) {
    const next = Math.max(-Infinity, ...all.filter(([s, e]) => s <= probe && probe < e).map(([, e]) => e));
    if (next === -Infinity) break;
    until = next;
    probe = next;
  }
  return until;
}

/** "08:00 Asia/Shanghai": a moment as the user's clock shows it, for operators. */
export function localClock(ms: number, timeZone: string): string {
  const t = DateTime.fromMillis(ms, { zone: timeZone });
  return `${t.toFormat(t.second === 0 ? 'HH:mm' : 'HH:mm:ss')} ${timeZone}`;
}
