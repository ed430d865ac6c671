import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium, SCREENSHOT_DIR } from './helpers/browser.ts';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts, vipActivated } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

const AUTH = { username: 'ops', password: 'timeline-test-pass' };

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let browser: Browser | undefined;
afterEach(async () => {
  await browser?.close();
  await proc?.stop();
  await env?.close();
  browser = proc = env = undefined;
});

/** 60 balance notices for user 10001 (more than a page), one refused for 10002, a VIP notice on two channels for 20001. */
async function world(): Promise<string> {
  env = await createTestEnv({
    dashboard: { port: 0, auth: AUTH, environment: { label: 'staging', color: '#c05621' }, chart_sample_interval: '200ms' },
    inbox: { enabled: true },
    display: { time_zone: 'Asia/Shanghai' },
  });
  env.fakeIm.setFaults({ not_imported: ['10002'] });
  await insertWalletRows(env.owner, env.config.wallet_database, [
    ...Array.from({ length: 60 }, (_, k) => balanceChanged(1 + 50 * k)),
    balanceChanged(2),
    vipActivated(1),
  ]);
  proc = await startPipeline(env.config, ['ingest', 'deliver', 'dashboard']);
  await waitFor(
    () => ledgerStatusCounts(env!.notice),
    (c) => c.delivered === 62 && c.failed === 1,
    20_000,
    'every notice final',
  );
  return `http://127.0.0.1:${proc.dashboard!.port}/admin`;
}

const auth = () => ({ authorization: `Basic ${Buffer.from(`${AUTH.username}:${AUTH.password}`).toString('base64')}` });

describe("a user's timeline", () => {
  it('answers "did user X get notice Y, and why not" from one URL, in the configured zone, and pages to any age', async () => {
    const base = await world();
    browser = await launchChromium();
    const context = await browser.newContext({ httpCredentials: AUTH, viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    mkdirSync(SCREENSHOT_DIR, { recursive: true });

    // One page load: the user and the event are in the URL; the single fact opens with its reason and what to do.
    await page.goto(`${base}/timeline?user_id=10002&event_id=${encodeURIComponent('tx_2:WalletBalanceChanged:10002:COIN')}`);
    const fact = page.locator('li.fact').first();
    await fact.waitFor({ timeout: 10_000 });
    await expect(page.locator('li.fact').count()).resolves.toBe(1);
    await expect(fact.locator('.badge').textContent()).resolves.toBe('tencent_im_c2c: failed 90012');
    await expect(fact.locator('.reason').textContent()).resolves.toContain('failed with 90012: the recipient is not an imported Tencent IM account');
    await expect(fact.locator('.todo').textContent()).resolves.toContain('account_import');
    await expect(fact.locator('.when').textContent()).resolves.toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d Asia\/Shanghai$/);
    await expect(page.locator('input[name=user_id]').inputValue()).resolves.toBe('10002');
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'timeline-failed.png') });
    // The code links to what it means.
    await fact.getByRole('link', { name: 'what 90012 means' }).click();
    await page.waitForURL(/\/errors#code-90012$/);
    await expect(page.locator('#code-90012').isVisible()).resolves.toBe(true);

    // Two channels of one fact, each with its badge.
    await page.goto(`${base}/timeline?user_id=20001`);
    await page.locator('li.fact').first().waitFor();
    await expect(page.locator('li.fact .badge').allTextContents()).resolves.toEqual(['inbox: delivered', 'tencent_im_c2c: delivered']);

    // 60 facts: the first page holds 50, "older" reaches the rest, no fact twice.
    await page.goto(`${base}/timeline?user_id=10001`);
    await page.locator('li.fact').first().waitFor();
    const first = await page.locator('li.fact').evaluateAll((items) => items.map((i) => (i as HTMLElement).dataset.eventId));
    expect(first).toHaveLength(50);
    await page.locator('#older').click();
    await page.waitForURL(/page_token=/);
    await page.locator('li.fact').first().waitFor();
    const second = await page.locator('li.fact').evaluateAll((items) => items.map((i) => (i as HTMLElement).dataset.eventId));
    expect(second).toHaveLength(10);
    expect(new Set([...first, ...second]).size).toBe(60);
    await expect(page.locator('#older').isHidden()).resolves.toBe(true);

    // The Notices page draws the last hours: outcomes per channel per minute (from the ledger), queues and pending age.
    await page.goto(`${base}/notices`);
    const charts = page.locator('#charts img');
    await expect(charts.count()).resolves.toBe(5); // 3 channels, queues, pending age
    await page.waitForFunction(() =>
      [...document.querySelectorAll('#charts img')].every((i) => (i as HTMLImageElement).complete && (i as HTMLImageElement).naturalWidth > 0),
    );
    const svg = await (await fetch(`${base}/charts/outcomes/tencent_im_c2c.svg?hours=1`, { headers: auth() })).text();
    const delivered = /data-series="delivered"[^>]*points="([^"]+)"/
      .exec(svg)![1]!
      .split(' ')
      .map((p) => Number(p.split(',')[1]));
    // One minute (or two, across a minute boundary) rises above the axis: the 61 C2C deliveries of this test.
    expect(delivered.filter((y) => y < 144).length).toBeGreaterThanOrEqual(1);
    expect(svg).toContain('data-series="failed"');
    expect(svg).toMatch(/<title>tencent_im_c2c: outcomes per minute<\/title>/);
    expect((await fetch(`${base}/charts/outcomes/fax.svg`, { headers: auth() })).status).toBe(404);
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'notices-charts.png'), fullPage: true });
    // A failed row links to its timeline and to what its code means.
    await page.locator('#failed a', { hasText: '90012' }).first().waitFor();
    await expect(page.locator('#failed a', { hasText: '90012' }).first().getAttribute('href')).resolves.toMatch(/\/errors#code-90012$/);

    // bull-board shows its times on the same clock (display.time_zone), the zone named.
    await page.goto(`${base}/queues/queue/deliver-tencent-im-c2c-wallet_notice?status=failed`);
    await page.getByText('tx_2:WalletBalanceChanged:10002:COIN').first().waitFor({ timeout: 10_000 });
    await expect(page.locator('body').textContent()).resolves.toMatch(/GMT\+8/);

    // At a phone's width nothing scrolls sideways.
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${base}/timeline?user_id=10002`);
    await phone.locator('li.fact').first().waitFor();
    await expect(phone.evaluate(() => document.documentElement.scrollWidth)).resolves.toBeLessThanOrEqual(390);
    await phone.goto(`${base}/notices`);
    await phone.locator('#failed tbody tr').first().waitFor();
    await expect(phone.evaluate(() => document.documentElement.scrollWidth)).resolves.toBeLessThanOrEqual(390);
  });

  it('the API names what is wrong with a question instead of guessing', async () => {
    const base = await world();
    const ask = async (q: string) => {
      const r = await fetch(`${base}/api/notices/timeline?${q}`, { headers: auth() });
      const text = await r.text();
      if (!text.startsWith('{')) throw new Error(`${r.status} ${text.slice(0, 300)}`);
      return { status: r.status, body: JSON.parse(text) };
    };
    await expect(ask('')).resolves.toMatchObject({ status: 400, body: { error: 'give user_id or event_id' } });
    await expect(ask('user_id=10001&page_token=forged')).resolves.toMatchObject({ status: 400, body: { error: 'the page token is not one this page made' } });
    await expect(ask('user_id=10001&since=yesterday-ish')).resolves.toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('--since must be a duration') },
    });
    await expect(ask('user_id=10001&status=lost')).resolves.toMatchObject({ status: 400 });
    // bull-board: a job is found by what it is and for whom, and shows no server paths.
    const board = await (
      await fetch(`${base}/queues/api/queues?activeQueue=deliver-tencent-im-c2c-wallet_notice&status=failed&page=1&jobsPerPage=10`, { headers: auth() })
    ).json();
    const jobs = board.queues.find((q: { name: string }) => q.name === 'deliver-tencent-im-c2c-wallet_notice').jobs;
    expect(jobs.map((j: { name: string }) => j.name)).toEqual(['wallet_notice WalletBalanceChanged → user 10002 · tx_2:WalletBalanceChanged:10002:COIN']);
    expect(JSON.stringify(jobs)).not.toContain(process.cwd());
    expect(jobs[0].stacktrace).toEqual([]);
    const failed = await ask('user_id=10002&status=failed&error_code=90012');
    expect(failed.body.facts).toHaveLength(1);
    expect(failed.body.facts[0].channels[0]).toMatchObject({ status: 'failed', error_code: '90012', error_anchor: 'code-90012' });
    expect((await ask('user_id=10002&status=delivered')).body.facts).toHaveLength(0);
  });
});
