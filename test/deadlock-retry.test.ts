import { describe, expect, it } from 'vitest';
import { retryOnDeadlock } from '../src/platform/deadlock-retry.ts';

describe('retryOnDeadlock', () => {
  it('reruns a statement InnoDB chose as a deadlock victim, and passes other errors straight through', async () => {
    let calls = 0;
    const result = await retryOnDeadlock(async () => {
      calls++;
      if (calls < 3) throw Object.assign(new Error('Deadlock found when trying to get lock'), { errno: 1213 });
      return 'ok';
    });
    expect(result).toBe('ok');
    expect(calls).toBe(3);

    let other = 0;
    await expect(
      retryOnDeadlock(async () => {
        other++;
        throw Object.assign(new Error('Unknown column'), { errno: 1054 });
      }),
    ).rejects.toThrow('Unknown column');
    expect(other).toBe(1);
  });
});
