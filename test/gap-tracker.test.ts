import { describe, expect, it } from 'vitest';
import { advanceCursor, INITIAL_CURSOR, parseGaps, serializeGaps } from '../src/outbox/gap-tracker.ts';

describe('gap tracker', () => {
  it('advances over contiguous ids', () => {
    const { state, skipped } = advanceCursor(INITIAL_CURSOR, [1, 2, 3], [], 1000, 5000);
    expect(state).toEqual({ highWaterId: 3, gaps: [] });
    expect(skipped).toEqual([]);
  });

  it('remembers holes below the high-water mark with the time they were first seen', () => {
    const { state } = advanceCursor({ highWaterId: 3, gaps: [] }, [4, 7, 8, 11], [], 1000, 5000);
    expect(state).toEqual({ highWaterId: 11, gaps: [[5, 6, 1000], [9, 10, 1000]] });
  });

  it('fills holes when their rows commit late, keeping the first-seen time of what is left', () => {
    const start = { highWaterId: 11, gaps: [[5, 6, 1000], [9, 10, 1000]] as [number, number, number][] };
    const { state } = advanceCursor(start, [12], [6, 9], 2000, 5000);
    expect(state).toEqual({ highWaterId: 12, gaps: [[5, 5, 1000], [10, 10, 1000]] });
  });

  it('gives a hole up only after the grace period, measured from when that hole was seen', () => {
    const start = { highWaterId: 10, gaps: [[5, 5, 1000], [8, 8, 4000]] as [number, number, number][] };
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
