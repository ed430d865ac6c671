import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium, SCREENSHOT_DIR } from './helpers/browser.ts';
import { mkdirSync } from 'node:fs';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { PrivateRedis } from './helpers/redis-server.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let browser: Browser | undefined;
let redis: PrivateRedis | undefined;
afterEach(async () => {
  await browser?.close();
  await proc?.stop();
  await env?.close();
  await redis?.destroy();
  browser = proc = env = redis = undefined;
});

describe('an outage is obvious on every dashboard page', () => {
  it('with Redis stopped, each page shows a banner saying since when and what still works; the board says why it is empty; it clears when Redis is back', async () => {
    redis = new PrivateRedis(['--maxmemory-policy', 'noeviction']);
    const url = await redis.start();
    env = await createTestEnv({ redis: { url }, dashboard: { port: 0, auth: { username: 'ops', password: 'outage-test-pass' } } });
    proc = await startPipeline(env.config, ['dashboard']);
    const base = `http://127.0.0.1:${proc.dashboard!.port}/admin`;
    browser = await launchChromium();
    const context = await browser.newContext({ httpCredentials: { username: 'ops', password: 'outage-test-pass' }, viewport: { width: 1280, height: 700 } });
    const pages = await Promise.all(
      ['notices', 'timeline', 'errors'].map(async (path) => {
        const page = await context.newPage();
        await page.goto(`${base}/${path}`);
        return { path, page };
      }),
    );
    const banner = (p: (typeof pages)[number]) => p.page.locator('#outage');
    for (const p of pages) expect(await banner(p).isHidden()).toBe(true);

    await redis.stop();
    for (const p of pages) {
      // The dashboard probes every 3 s and each page looks every 3 s: seconds, however slow this machine is.
      await banner(p).waitFor({ state: 'visible', timeout: 60_000 });
      const text = await banner(p).textContent();
      expect(text, p.path).toMatch(
        /^Redis unreachable since \d\d:\d\d:\d\d UTC: the queue board is empty and sends wait .* the Notices and Timeline pages still work$/,
      );
    }
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await pages[0]!.page.screenshot({ path: join(SCREENSHOT_DIR, 'outage-banner.png') }); // docs/outage-banner.png is a copy
    const board = await context.request.get(`${base}/queues`, { headers: { accept: 'text/html' } });
    expect(board.status()).toBe(503);
    expect(await board.text()).toContain('The queue board reads everything from Redis');
    const health = await (await context.request.get(`${base}/api/health`)).json();
    expect(health).toMatchObject({ mysql: { ok: true, down_since_ms: null }, redis: { ok: false } });

    await redis.start(redis.port);
    for (const p of pages) await banner(p).waitFor({ state: 'hidden', timeout: 60_000 });
    await waitFor(
      async () => (await context.request.get(`${base}/queues`, { headers: { accept: 'text/html' } })).status(),
      (s) => s === 200,
      30_000,
      'the board back',
    );
  }, 180_000);
});

describe('nextBackendState', () => {
  it('keeps the first moment of an outage until a probe succeeds', async () => {
    const { nextBackendState } = await import('../dashboard/backend-watch.ts');
    const up = { ok: true, down_since_ms: null, checked_ms: 1 };
    const down = nextBackendState(up, false, 10);
    expect(down).toEqual({ ok: false, down_since_ms: 10, checked_ms: 10 });
    expect(nextBackendState(down, false, 20)).toEqual({ ok: false, down_since_ms: 10, checked_ms: 20 });
    expect(nextBackendState(down, true, 30)).toEqual({ ok: true, down_since_ms: null, checked_ms: 30 });
    // Never looked at yet, and found down: the outage starts now.
    expect(nextBackendState({ ok: true, down_since_ms: null, checked_ms: null }, false, 5).down_since_ms).toBe(5);
  });
});

describe('the banner clock', () => {
  it('writes two-digit hours past midnight, in the operator zone', async () => {
    const { boardOutagePage } = await import('../dashboard/outage-banner.ts');
    const justAfterMidnight = Date.UTC(2026, 11, 8, 0, 3, 4);
    const page = boardOutagePage('/admin', { ok: false, down_since_ms: justAfterMidnight, checked_ms: justAfterMidnight }, 'UTC');
    expect(page).toContain('Redis unreachable since 00:03:04 UTC');
    expect(boardOutagePage('/admin', { ok: false, down_since_ms: justAfterMidnight, checked_ms: null }, 'Asia/Shanghai')).toMatch(
      /since 08:03:04 (GMT\+8|CST)/,
    );
  });
});
