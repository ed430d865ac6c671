import { afterEach, describe, expect, it } from 'vitest';
import { hostname, userInfo } from 'node:os';
import type { Browser } from 'playwright-core';
import { launchChromium } from './helpers/browser.ts';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { ledgerStatusCounts } from './helpers/outbox.ts';
import { kick, mqBody } from './helpers/room.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { spawnNotice } from './helpers/spawn.ts';
import { RejectStore } from '../src/intake/reject-store.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let browser: Browser | undefined;
afterEach(async () => {
  await browser?.close();
  await proc?.stop();
  await env?.close();
  browser = proc = env = undefined;
});

const PASSWORD = 'rejects-test-pass';
const auth = { authorization: `Basic ${Buffer.from(`ops:${PASSWORD}`).toString('base64')}` };
const HOSTILE = '<img src=x onerror="window.__pwned=1"> not json';

/** Three rejects as the MQ consumer leaves them: one whose cause is now fixed, one still poison, one not even UTF-8. */
async function seedRejects(e: TestEnv): Promise<number[]> {
  const store = new RejectStore(e.notice);
  const base = { sourceName: 'room_outbox', topic: 'hyapp_room_outbox', tag: 'RoomUserKicked', deliveryAttempt: 17 };
  await store.record(
    { ...base, messageId: 'M-FIXED', keys: ['rev_kick_1'], rawBody: Buffer.from(mqBody(kick(1))), reason: 'recording failed 16 times: ER_LOCK_WAIT_TIMEOUT' },
    Date.now() - 7_200_000,
  );
  await store.record({ ...base, messageId: 'M-POISON', keys: [], rawBody: Buffer.from(HOSTILE), reason: 'body is not JSON: Unexpected character' }, Date.now());
  await store.record(
    { ...base, messageId: 'M-BINARY', keys: [], rawBody: Buffer.from([0xff, 0xfe, 0x00, 0x41]), reason: 'body is not valid UTF-8' },
    Date.now(),
  );
  const [rows] = await e.notice.query<any[]>('SELECT id, message_id FROM notice_rejected_messages ORDER BY id');
  return rows.map((r) => Number(r.id));
}

describe('rejected MQ messages', () => {
  it('are listed and filtered, their bodies shown as text or hex, and requeued through the MQ parser once the cause is fixed (audited)', async () => {
    env = await createTestEnv({
      wallet_notice_worker: { enabled: false },
      dashboard: { port: 0, auth: { username: 'ops', password: PASSWORD }, environment: { label: 'test', color: '#333333' } },
    });
    const [fixed, poison, binary] = await seedRejects(env);
    proc = await startPipeline(env.config, ['deliver', 'dashboard']);
    const api = `http://127.0.0.1:${proc.dashboard!.port}/admin/api/rejects`;

    const all = await (await fetch(api, { headers: auth })).json();
    expect(all.total).toBe(3);
    expect(all.rows.map((r: { message_id: string }) => r.message_id)).toEqual(['M-BINARY', 'M-POISON', 'M-FIXED']);
    expect((await (await fetch(`${api}?reason=UTF-8`, { headers: auth })).json()).rows.map((r: { id: number }) => r.id)).toEqual([binary]);
    expect((await (await fetch(`${api}?since=1h`, { headers: auth })).json()).total).toBe(2);
    expect((await fetch(`${api}?since=yesterday`, { headers: auth })).status).toBe(400);

    const shown = await (await fetch(`${api}/${binary}`, { headers: auth })).json();
    expect(shown.body).toEqual({ utf8: false, text: null, hex: 'ff fe 00 41', bytes: 4, truncated: false });
    expect((await (await fetch(`${api}/${poison}`, { headers: auth })).json()).body).toMatchObject({ utf8: true, text: HOSTILE });
    expect((await fetch(`${api}/999999`, { headers: auth })).status).toBe(404);

    const bad = await fetch(`${api}/requeue`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ ids: ['1; DROP TABLE x'] }),
    });
    expect(bad.status).toBe(400);
    const requeue = await fetch(`${api}/requeue`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ ids: [fixed, poison, 424242] }),
    });
    expect(await requeue.json()).toEqual({
      requeued: [fixed],
      still_rejected: [{ id: poison, reason: expect.stringMatching(/^body is not JSON/) }],
      missing: [424242],
    });
    await waitFor(
      async () => env!.fakeIm.delivered().map((m) => JSON.parse(m.data).event_id),
      (ids) => ids.includes('rev_kick_1'),
      15_000,
      'the fixed kick delivered',
    );
    expect((await (await fetch(api, { headers: auth })).json()).total).toBe(2);
    const audit = await (await fetch(`http://127.0.0.1:${proc.dashboard!.port}/admin/api/notices/audit`, { headers: auth })).json();
    expect(audit.actions[0]).toMatchObject({
      actor: 'ops',
      via: 'dashboard',
      action: 'requeue_rejected',
      matched: 2,
      affected: 1,
      detail: { still_rejected: 1, missing: 1 },
    });

    // In the page, a hostile body is text: no element is made from it, no script runs.
    browser = await launchChromium();
    const page = await (await browser.newContext({ httpCredentials: { username: 'ops', password: PASSWORD } })).newPage();
    await page.goto(`http://127.0.0.1:${proc.dashboard!.port}/admin/notices`);
    const row = page.locator(`tr[data-reject-id="${poison}"]`);
    await row.getByRole('button', { name: 'view' }).click();
    await page.locator('#rejects-body').filter({ hasText: 'onerror' }).waitFor({ timeout: 10_000 });
    expect(await page.locator('#rejects-body img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it('the CLI lists, shows and requeues them too, as the OS user', async () => {
    env = await createTestEnv({ wallet_notice_worker: { enabled: false } });
    const [fixed, poison] = await seedRejects(env);
    proc = await startPipeline(env.config, ['deliver']);
    const run = async (args: string[]) => {
      const p = spawnNotice([...args, '--config', env!.configFile]);
      const code = await p.exited;
      const out = p.output();
      return { code, json: JSON.parse(out.slice(out.search(/[[{]/))) };
    };
    expect((await run(['rejects', '--reason', 'JSON', '--output', 'json'])).json.rows.map((r: { id: number }) => r.id)).toEqual([poison]);
    expect((await run(['rejects', 'show', String(poison)])).json.body.text).toBe(HOSTILE);
    const requeued = await run(['rejects', 'requeue', String(fixed), String(poison)]);
    expect(requeued.json).toMatchObject({ requeued: [fixed], still_rejected: [{ id: poison }] });
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 1,
      15_000,
      'delivered',
    );
    const [actions] = await env.notice.query<any[]>('SELECT actor, via, action FROM notice_operator_actions');
    expect(actions).toEqual([{ actor: `${userInfo().username}@${hostname()}`, via: 'cli', action: 'requeue_rejected' }]);
    const badId = spawnNotice(['rejects', 'requeue', 'abc', '--config', env.configFile]);
    expect(await badId.exited).toBe(2);
    expect(badId.output()).toContain('a rejected message id is a positive integer, got "abc"');
  });

  it('keep at most 64 KiB of a body (with its length and SHA-256), are purged by retention.rejected, and a reason search is bounded', async () => {
    const { createHash } = await import('node:crypto');
    const { REASON_SEARCH_WINDOW } = await import('../src/intake/reject-store.ts');
    env = await createTestEnv({ wallet_notice_worker: { enabled: false }, retention: { rejected: '1h' }, reconciler: { interval: '100ms' } });
    const store = new RejectStore(env.notice);
    const base = { sourceName: 'room_outbox', topic: 'hyapp_room_outbox', tag: 'RoomUserKicked', deliveryAttempt: 1, keys: [] };
    const huge = Buffer.alloc(4 * 1024 * 1024, 'x');
    await store.record(
      {
        ...base,
        messageId: 'M-HUGE',
        rawBody: huge,
        reason: 'body is 4194304 bytes; more than 65536 (intake reads no more; no channel takes a notice that large)',
      },
      Date.now(),
    );
    const [[row]] = await env.notice.query<any[]>(
      "SELECT id, LENGTH(raw_body) AS kept, body_bytes, HEX(body_sha256) AS sha FROM notice_rejected_messages WHERE message_id = 'M-HUGE'",
    );
    expect([Number(row.kept), Number(row.body_bytes), String(row.sha).toLowerCase()]).toEqual([
      65_536,
      huge.length,
      createHash('sha256').update(huge).digest('hex'),
    ]);
    const { requeueRejected } = await import('../src/ops/reject-requeue.ts');
    const again = await requeueRejected(
      {
        rejects: store,
        entryFor: () => ({
          parse: () => {
            throw new Error('must not parse a kept prefix');
          },
          recorder: null as never,
        }),
      },
      [Number(row.id)],
    );
    expect(again.stillRejected[0]!.reason).toMatch(/only the first 65536 of its 4194304 bytes were kept/);

    // A search by reason looks through the newest REASON_SEARCH_WINDOW messages: an older match is not scanned for.
    await store.record({ ...base, messageId: 'M-OLD-NEEDLE', rawBody: Buffer.from('x'), reason: 'needle in the past' }, Date.now() - 30 * 60_000);
    const values = Array.from({ length: REASON_SEARCH_WINDOW }, (_, i) => [
      'room_outbox',
      `M-${i}`,
      'hyapp_room_outbox',
      1,
      'hay',
      Date.now() - 20 * 60_000 + i,
    ]);
    await env.notice.query('INSERT INTO notice_rejected_messages (source_name, message_id, topic, delivery_attempt, reason, created_at_ms) VALUES ?', [values]);
    expect((await store.list({ reason: 'needle', limit: 10, offset: 0 })).total).toBe(0);
    expect((await store.list({ reason: 'needle', sinceMs: Date.now() - 40 * 60_000, limit: 10, offset: 0 })).total).toBe(0);
    // The newest window holds M-HUGE and all but the oldest of the hay.
    expect((await store.list({ reason: 'hay', limit: 10, offset: 0 })).total).toBe(REASON_SEARCH_WINDOW - 1);

    // Older than retention.rejected: gone once deliver's upkeep runs.
    await store.record({ ...base, messageId: 'M-ANCIENT', rawBody: Buffer.from('x'), reason: 'old' }, Date.now() - 2 * 3600_000);
    proc = await startPipeline(env.config, ['deliver']);
    const left = async () =>
      Number((await env!.notice.query<any[]>("SELECT COUNT(*) AS n FROM notice_rejected_messages WHERE message_id = 'M-ANCIENT'"))[0][0].n);
    await waitFor(left, (n) => n === 0, 15_000, 'the old reject purged');
    expect(Number((await env.notice.query<any[]>('SELECT COUNT(*) AS n FROM notice_rejected_messages'))[0][0].n)).toBe(REASON_SEARCH_WINDOW + 2);
  });
});
