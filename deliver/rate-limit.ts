/**
 * BullMQ's limiter counts job starts in fixed windows. One window of `rate` per 1000 ms lets a whole second's
 * quota start at once, and two such bursts less than a second apart (the requests of one window arrive with
 * jitter) exceed Tencent's per-second limit. Many small windows with a little slack keep every sliding
 * one-second span at or under `rate`: with `k` windows of `max` jobs each lasting `duration` ms, a one-second span
 * touches at most floor((1000 + spread) / duration) + 1 windows, which is ≤ k while the request spread stays under
 * one window. For 200/s: 8 jobs per 42 ms, about 190/s (95 %).
 */
export function smoothLimiter(ratePerSecond: number): { max: number; duration: number } {
  const max = Math.max(1, Math.ceil(ratePerSecond / 25));
  const windowsPerSecond = ratePerSecond / max;
  const duration = windowsPerSecond > 1 ? Math.ceil(1000 / (windowsPerSecond - 1)) : 1001;
  return { max, duration };
}
