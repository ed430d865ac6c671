import { describe, expect, it } from 'vitest';
import { FETCH_LANE_SIZE, MAX_FETCH_LANES, fetchLanes } from '../deliver/deliver-role.ts';

describe('fetchLanes (deliver concurrency split over several BullMQ workers)', () => {
  it('keeps the total concurrency, lanes near FETCH_LANE_SIZE, never more than MAX_FETCH_LANES', () => {
    for (let concurrency = 1; concurrency <= 1000; concurrency++) {
      const lanes = fetchLanes(concurrency);
      expect(lanes.reduce((a, b) => a + b, 0)).toBe(concurrency);
      expect(lanes.length).toBe(Math.min(MAX_FETCH_LANES, Math.ceil(concurrency / FETCH_LANE_SIZE)));
      expect(Math.max(...lanes) - Math.min(...lanes)).toBeLessThanOrEqual(1);
      expect(Math.min(...lanes)).toBeGreaterThanOrEqual(1);
    }
  });

  it('splits the documented settings as expected', () => {
    expect(fetchLanes(1)).toEqual([1]);
    expect(fetchLanes(32)).toEqual([8, 8, 8, 8]);
    expect(fetchLanes(64)).toEqual([8, 8, 8, 8, 8, 8, 8, 8]);
    expect(fetchLanes(70)).toEqual([9, 9, 9, 9, 9, 9, 8, 8]);
  });
});
