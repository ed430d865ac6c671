import { describe, expect, it } from 'vitest';
import { localClock, quietHoursSchema, quietUntil } from '../src/quiet-hours/window.ts';

const utc = (iso: string) => Date.parse(iso);
const shanghai = { timeZone: 'Asia/Shanghai', windows: [{ start: '22:00', end: '08:00' }] };

describe('quiet hours: when a quiet period ends (pure)', () => {
  it.each([
    // [what, now (UTC), hours, ends (UTC) or null]
    ['Shanghai 23:30, overnight window', '2026-12-06T15:30:00Z', shanghai, '2026-12-07T00:00:00Z'],
    ['Shanghai 07:59:59, still quiet', '2026-12-06T23:59:59Z', shanghai, '2026-12-07T00:00:00Z'],
    ['Shanghai 08:00:00, over', '2026-12-07T00:00:00Z', shanghai, null],
    ['Shanghai 21:59, not yet', '2026-12-06T13:59:00Z', shanghai, null],
    ['Shanghai 22:00, begins', '2026-12-06T14:00:00Z', shanghai, '2026-12-07T00:00:00Z'],
    ['Shanghai 00:30, after midnight', '2026-12-06T16:30:00Z', shanghai, '2026-12-07T00:00:00Z'],
    ['start = end is no window', '2026-12-06T15:30:00Z', { timeZone: 'Asia/Shanghai', windows: [{ start: '22:00', end: '22:00' }] }, null],
    [
      'same-day window 13:00-14:00 at 13:30',
      '2026-12-06T05:30:00Z',
      { timeZone: 'Asia/Shanghai', windows: [{ start: '13:00', end: '14:00' }] },
      '2026-12-06T06:00:00Z',
    ],
    [
      'touching windows chain: 22:00-23:00 then 23:00-07:00',
      '2026-12-06T14:30:00Z',
      {
        timeZone: 'Asia/Shanghai',
        windows: [
          { start: '22:00', end: '23:00' },
          { start: '23:00', end: '07:00' },
        ],
      },
      '2026-12-06T23:00:00Z',
    ],
    [
      'seconds: 23:59:30-00:00:10',
      '2026-12-06T15:59:45Z',
      { timeZone: 'Asia/Shanghai', windows: [{ start: '23:59:30', end: '00:00:10' }] },
      '2026-12-06T16:00:10Z',
    ],
    // New York springs forward on 2026-03-08 at 02:00 EST → 03:00 EDT: the night is an hour shorter.
    [
      'New York, spring-forward night 22:00-08:00',
      '2026-03-08T04:30:00Z',
      { timeZone: 'America/New_York', windows: [{ start: '22:00', end: '08:00' }] },
      '2026-03-08T12:00:00Z',
    ],
    [
      'New York, a window over the skipped hour 01:00-03:00',
      '2026-03-08T06:30:00Z',
      { timeZone: 'America/New_York', windows: [{ start: '01:00', end: '03:00' }] },
      '2026-03-08T07:00:00Z',
    ],
    // A start in the skipped hour moves forward by the gap, as Temporal's "compatible" rule does: 02:30 → 03:30 EDT.
    [
      'New York, a window starting in the skipped hour 02:30-04:00 at 03:10 EDT',
      '2026-03-08T07:10:00Z',
      { timeZone: 'America/New_York', windows: [{ start: '02:30', end: '04:00' }] },
      null,
    ],
    [
      'New York, a window starting in the skipped hour 02:30-04:00 at 03:40 EDT',
      '2026-03-08T07:40:00Z',
      { timeZone: 'America/New_York', windows: [{ start: '02:30', end: '04:00' }] },
      '2026-03-08T08:00:00Z',
    ],
    // New York falls back on 2026-11-01 at 02:00 EDT → 01:00 EST: the night is an hour longer.
    [
      'New York, fall-back night 22:00-08:00',
      '2026-11-01T03:00:00Z',
      { timeZone: 'America/New_York', windows: [{ start: '22:00', end: '08:00' }] },
      '2026-11-01T13:00:00Z',
    ],
    // London falls back on 2026-10-25 at 02:00 BST → 01:00 GMT.
    [
      'London, fall-back night 23:00-07:00',
      '2026-10-24T23:00:00Z',
      { timeZone: 'Europe/London', windows: [{ start: '23:00', end: '07:00' }] },
      '2026-10-25T07:00:00Z',
    ],
    [
      'London, summer 23:00-07:00 at 06:59 BST',
      '2026-07-01T05:59:00Z',
      { timeZone: 'Europe/London', windows: [{ start: '23:00', end: '07:00' }] },
      '2026-07-01T06:00:00Z',
    ],
    // London springs forward on 2026-03-29 at 01:00 GMT → 02:00 BST.
    [
      'London, spring-forward night 23:00-07:00',
      '2026-03-28T23:30:00Z',
      { timeZone: 'Europe/London', windows: [{ start: '23:00', end: '07:00' }] },
      '2026-03-29T06:00:00Z',
    ],
  ] as const)('%s', (_what, now, hours, ends) => {
    expect(quietUntil(utc(now), hours)).toBe(ends === null ? null : utc(ends));
  });

  it('refuses unknown zones and malformed times, naming the field', () => {
    const bad = quietHoursSchema.safeParse({ time_zone: 'Mars/Olympus_Mons', windows: [{ start: '24:00', end: '8:00' }] });
    expect(bad.success).toBe(false);
    const paths = bad.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    expect(paths).toEqual([
      'time_zone: must be an IANA time zone such as Asia/Shanghai',
      'windows.0.start: must be HH:MM or HH:MM:SS (00:00 to 23:59:59)',
      'windows.0.end: must be HH:MM or HH:MM:SS (00:00 to 23:59:59)',
    ]);
    expect(quietHoursSchema.safeParse({ time_zone: 'Europe/London', windows: [{ start: '23:00', end: '07:00' }] }).success).toBe(true);
  });

  it('names a moment as the user sees it', () => {
    expect(localClock(utc('2026-12-07T00:00:00Z'), 'Asia/Shanghai')).toBe('08:00 Asia/Shanghai');
    expect(localClock(utc('2026-12-07T00:00:10Z'), 'Asia/Shanghai')).toBe('08:00:10 Asia/Shanghai');
  });
});
