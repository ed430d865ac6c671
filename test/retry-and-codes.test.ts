import { describe, expect, it } from 'vitest';
import { decideRetry, retryDelayMs } from '../src/delivery/retry-policy.ts';
import { classifyErrorCode } from '../src/tencent-im/error-codes.ts';
import { canTransition, TRANSITIONS } from '../src/ledger/transitions.ts';
import { dedupNumbers } from '../src/tencent-im/message.ts';

describe('retry policy', () => {
  it('grows exponentially with jitter and is capped', () => {
    expect(retryDelayMs(1, 1000, 60_000, () => 0.5)).toBe(1000);
    expect(retryDelayMs(3, 1000, 60_000, () => 0.5)).toBe(4000);
    expect(retryDelayMs(3, 1000, 60_000, () => 0)).toBe(2000);
    expect(retryDelayMs(30, 1000, 60_000, () => 0.99)).toBe(60_000);
  });

  it('allows max_retry_count retries after the first attempt, then is final', () => {
    expect(decideRetry(1, 2, 10, 100).final).toBe(false);
    expect(decideRetry(2, 2, 10, 100).final).toBe(false);
    expect(decideRetry(3, 2, 10, 100).final).toBe(true);
    expect(decideRetry(1, 0, 10, 100).final).toBe(true);
  });
});

describe('Tencent IM error classification', () => {
  it.each([
    [70500, 'retry'],
    [20004, 'retry'],
    [90994, 'retry'],
    [60007, 'rate_limited'],
    [60018, 'rate_limited'],
    [70001, 'resign'],
    [70003, 'resign'],
    [90012, 'permanent'],
    [20003, 'permanent'],
    [80002, 'permanent'],
    [60010, 'permanent'],
    [123456, 'permanent'],
  ])('%i → %s', (code, expected) => {
    expect(classifyErrorCode(code)).toBe(expected);
  });

  it('derives the same MsgRandom/MsgSeq for every retry of one event, different ones for another', () => {
    expect(dedupNumbers('a')).toEqual(dedupNumbers('a'));
    expect(dedupNumbers('a')).not.toEqual(dedupNumbers('b'));
  });
});

describe('ledger transitions', () => {
  it('lets nothing leave delivered but a revocation, and failed only back to pending by an operator (or revoked)', () => {
    expect(TRANSITIONS.delivered).toEqual(['revoking']);
    expect(canTransition('delivered', 'delivering')).toBe(false);
    expect(canTransition('failed', 'pending')).toBe(true);
    expect(canTransition('failed', 'delivering')).toBe(false);
    expect(canTransition('pending', 'delivered')).toBe(false);
  });
});
