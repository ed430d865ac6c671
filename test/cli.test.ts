import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './helpers/env.ts';
import { spawnNotice } from './helpers/spawn.ts';
import { AuditLog } from '../src/ops/audit-log.ts';

/** The CLI as an operator meets it: plain answers when there is nothing, and no Redis for commands that need none. */
let env: TestEnv | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const run = async (args: string[]) => {
  const p = spawnNotice([...args, '--config', env!.configFile]);
  const started = Date.now();
  const code = await Promise.race([p.exited, new Promise((r) => setTimeout(() => r('hung'), 20_000))]);
  if (code === 'hung') p.child.kill('SIGKILL');
  return { code, out: p.output(), ms: Date.now() - started };
};

describe('notice-service CLI', () => {
  it('says why inspect finds nothing, refuses to requeue a rejected message that does not exist, and audits only what existed', async () => {
    env = await createTestEnv({});
    const inspect = await run(['inspect', '10042']);
    expect(inspect.code).toBe(1);
    expect(inspect.out).toContain('no ledger row has event id "10042" (an event id, not a user id');
    const requeue = await run(['rejects', 'requeue', '999']);
    expect(requeue.code).toBe(1);
    expect(requeue.out).toContain('no rejected message with id 999');
    const [audit] = await new AuditLog(env.notice).recent(1);
    expect(audit).toMatchObject({ action: 'requeue_rejected', matched: 0, affected: 0 });
  });

  it('audit and rejects work with Redis down (they need only MySQL)', async () => {
    env = await createTestEnv({});
    writeFileSync(env.configFile, readFileSync(env.configFile, 'utf8').replace(/url: redis:\/\/[^\n]+/, 'url: redis://127.0.0.1:1'));
    for (const args of [['audit'], ['rejects'], ['rejects', 'show', '1']]) {
      const r = await run(args);
      expect(r.code, `${args.join(' ')}: ${r.out}`).not.toBe('hung');
      expect(r.out).not.toMatch(/ECONNREFUSED/);
    }
  });
});
