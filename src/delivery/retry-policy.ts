/**
 * Exponential backoff with full jitter around the midpoint: attempt 1 waits ~base, attempt n ~base·2^(n-1),
 * capped at max. Pure, so the ledger's next_retry_at_ms and BullMQ's delay are the same number.
 */
export function retryDelayMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exponential = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  const jittered = exponential * (0.5 + random());
  return Math.round(Math.min(maxMs, jittered));
}

export interface RetryDecision {
  final: boolean;
  delayMs: number;
}

/** attemptCount is the number of finished sends including this one; max_retry_count retries follow the first. */
export function decideRetry(attemptCount: number, maxRetryCount: number, baseMs: number, maxMs: number, random?: () => number): RetryDecision {
  if (attemptCount > maxRetryCount) return { final: true, delayMs: 0 };
  return { final: false, delayMs: retryDelayMs(attemptCount, baseMs, maxMs, random) };
}
