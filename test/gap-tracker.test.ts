import { describe, expect, it } from 'vitest';
import { advanceCursor, INITIAL_CURSOR, parseGaps, rewoundTo, serializeGaps } from '../src/outbox/gap-tracker.ts';
import { afterCheck, chunksFor, MAX_CHECK_INTERVAL_MS, MAX_RANGES_PER_CHUNK, nextCheckAt } from '../src/outbox/gap-watch.ts';

describe('gap tracker', () => {
  it('advances over contiguous ids', () => {
    const { state, skipped } = advanceCursor(INITIAL_CURSOR, [1, 2, 3], [], 1000, 5000);
    expect(state).toEqual({ highWaterId: 3, gaps: [] });
    expect(skipped).toEqual([]);
  });

  it('remembers holes below the high-water mark with the time they were first seen', () => {
    const { state } = advanceCursor({ highWaterId: 3, gaps: [] }, [4, 7, 8, 11], [], 1000, 5000);
    expect(state).toEqual({
      highWaterId: 11,
      gaps: [
        [5, 6, 1000],
        [9, 10, 1000],
      ],
    });
  });

  it('fills holes when their rows commit late, keeping the first-seen time of what is left', () => {
    const start = {
      highWaterId: 11,
      gaps: [
        [5, 6, 1000],
        [9, 10, 1000],
      ] as [number, number, number][],
    };
    const { state } = advanceCursor(start, [12], [6, 9], 2000, 5000);
    expect(state).toEqual({
      highWaterId: 12,
      gaps: [
        [5, 5, 1000],
        [10, 10, 1000],
      ],
    });
  });

  it('gives a hole up only after the grace period, measured from when that hole was seen', () => {
    const start = {
      highWaterId: 10,
      gaps: [
        [5, 5, 1000],
        [8, 8, 4000],
      ] as [number, number, number][],
    };
    const { state, skipped } = advanceCursor(start, [], [], 6000, 5000);
    expect(skipped).toEqual([[5, 5, 1000]]);
    expect(state.gaps).toEqual([[8, 8, 4000]]);
  });

  it('round-trips through its stored form and ignores garbage', () => {
    const gaps: [number, number, number][] = [[1, 2, 3]];
    expect(parseGaps(serializeGaps(gaps))).toEqual(gaps);
    expect(parseGaps('{"x":1}')).toEqual([]);
    expect(parseGaps(null)).toEqual([]);
  });
});

describe('late-commit watch schedule', () => {
  const GRACE = 60_000;
  const HORIZON = 24 * 3600_000;

  it('re-checks a given-up hole one grace later, then at doubling intervals capped hourly, and last at the horizon', () => {
    const times: number[] = [];
    let now = GRACE; // given up one grace after first seen at 0
    for (let checks = 0; ; checks++) {
      const next = nextCheckAt(0, checks, now, GRACE, HORIZON);
      if (next === null) break;
      times.push(next);
      now = next;
    }
    expect(times.slice(0, 4)).toEqual([2 * GRACE, 4 * GRACE, 8 * GRACE, 16 * GRACE]);
    expect(times.at(-1)).toBe(HORIZON);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(Math.max(...gaps)).toBe(MAX_CHECK_INTERVAL_MS);
    // Bounded: about 30 looks over a day, whatever the hole.
    expect(times.length).toBeLessThan(32);
  });

  it('chunks given-up holes by 200 ranges and drops found ids; a chunk ends filled or abandoned at the horizon', () => {
    const skipped = Array.from({ length: 450 }, (_, i): [number, number, number] => [i * 7 + 1, i * 7 + 6, 1000 + i]);
    const chunks = chunksFor(skipped, 70_000, GRACE, HORIZON);
    expect(chunks.map((c) => c.ranges.length)).toEqual([MAX_RANGES_PER_CHUNK, MAX_RANGES_PER_CHUNK, 50]);
    expect(chunks[0]).toMatchObject({ fromId: 1, toId: 199 * 7 + 6, holeIds: 200 * 6, firstSeenMs: 1000, nextCheckAtMs: 70_000 + GRACE, checks: 0 });

    const one = { ...chunks[2]!, ranges: [[3151, 3152]] as Array<[number, number]>, holeIds: 2 };
    expect(afterCheck(one, [3151, 3152], 200_000, GRACE, HORIZON)).toEqual({ kind: 'filled' });
    const partly = afterCheck(one, [3151], 200_000, GRACE, HORIZON);
    expect(partly).toMatchObject({ kind: 'watching', chunk: { ranges: [[3152, 3152]], holeIds: 1, checks: 1, nextCheckAtMs: 200_000 + 2 * GRACE } });
    expect(afterCheck(one, [], one.firstSeenMs + HORIZON, GRACE, HORIZON)).toEqual({ kind: 'abandoned', holeIds: 2 });
  });
});

describe('a cursor going back to its outbox (after a failover)', () => {
  it('goes back to the given id, keeps the holes below it (cut at it), drops those above, forgets the row identity', () => {
    const state = {
      highWaterId: 960,
      gaps: [
        [100, 110, 5],
        [620, 640, 6],
        [700, 705, 7],
      ] as Array<[number, number, number]>,
      highWaterRow: 'abc',
    };
    expect(rewoundTo(state, 630)).toEqual({
      highWaterId: 630,
      gaps: [
        [100, 110, 5],
        [620, 630, 6],
      ],
      highWaterRow: null,
    });
    expect(rewoundTo(state, 960)).toBeNull();
    expect(rewoundTo(state, 2000)).toBeNull();
  });
});
