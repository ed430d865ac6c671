import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './helpers/env.ts';
import { PrivateRedis } from './helpers/redis-server.ts';
import { spawnNotice, stopGracefully, waitForOutput, type Spawned } from './helpers/spawn.ts';
import { nextRepeat, repeatedErrors } from '../src/platform/repeated-errors.ts';

let env: TestEnv | undefined;
let redis: PrivateRedis | undefined;
let proc: Spawned | undefined;
afterEach(async () => {
  if (proc?.child.exitCode === null) proc.child.kill('SIGKILL');
  await env?.close();
  await redis?.destroy();
  env = redis = proc = undefined;
});

describe('a Redis outage in the log', () => {
  it('is one line per component per 10 s, with how many errors it stands for, and no stack', async () => {
    redis = new PrivateRedis();
    const url = await redis.start();
    env = await createTestEnv({
      redis: { url },
      log: { level: 'info' },
      dashboard: { port: 0, auth: { enabled: false }, environment: { label: 'local' } },
      inbox: { enabled: true, api_port: 0 },
    });
    proc = spawnNotice(['all', '--config', env.configFile]);
    await waitForOutput(proc, /notice-service started/);
    const from = proc.output().length;
    await redis.stop();
    const outageMs = 15_000;
    await new Promise((r) => setTimeout(r, outageMs));
    const during = proc.output().slice(from);
    await redis.start(redis.port);
    await stopGracefully(proc);
    const perMessage = new Map<string, number>();
    for (const line of during.split('\n').filter(Boolean)) {
      expect(line, 'every line is JSON (no ioredis "Unhandled error event" with a stack)').toMatch(/^\{/);
      const { msg } = JSON.parse(line) as { msg: string };
      perMessage.set(msg, (perMessage.get(msg) ?? 0) + 1);
    }
    expect(perMessage.size).toBeGreaterThan(0);
    // One at once, then one per 10 s: at most 3 in 15 s (it was 84 worker lines and 42 queue lines in 20 s).
    for (const [msg, count] of perMessage) expect(count, msg).toBeLessThanOrEqual(Math.ceil(outageMs / 10_000) + 1);
    expect(during).toMatch(/"repeated":\d+/);
  }, 120_000);

  it('nextRepeat: the first error now, then one per interval carrying the count it held back', () => {
    let state = { lastLoggedMs: null as number | null, unlogged: 0 };
    const decisions: string[] = [];
    for (const at of [0, 100, 200, 9_999, 10_000, 10_001, 25_000]) {
      const next = nextRepeat(state, at, 10_000);
      state = next.state;
      decisions.push(next.log ? `log+${next.repeated}` : 'held');
    }
    expect(decisions).toEqual(['log+0', 'held', 'held', 'held', 'log+3', 'held', 'log+1']);
    const lines: unknown[] = [];
    let now = 0;
    const onError = repeatedErrors({ warn: (obj: unknown) => void lines.push(obj) } as never, 'x', 10_000, () => now);
    onError(new Error('ECONNREFUSED'));
    now = 5_000;
    onError(new Error('ECONNREFUSED'));
    now = 10_000;
    onError(new Error('ECONNREFUSED'));
    expect(lines).toEqual([{ err: 'ECONNREFUSED' }, { err: 'ECONNREFUSED', repeated: 1, in_ms: 10_000 }]);
  });
});
