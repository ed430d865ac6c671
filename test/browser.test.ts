import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium, SCREENSHOT_DIR } from './helpers/browser.ts';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { jobCounts, queueActivity, startPipeline } from './helpers/pipeline.ts';
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

describe('dashboard in a real browser', () => {
  it('an operator logs in, sees the queue and a failed event, requeues it, and it is delivered', async () => {
    env = await createTestEnv({
      dashboard: { port: 0, auth: { username: 'ops', password: 'browser-test-pass' }, environment: { label: 'staging', color: '#c05621' } },
      tencent_im: { rate_limit_per_second: 200 }, // Tencent's default quota, so the charts have one to place
    });
    env.fakeIm.setFaults({ not_imported: ['10002'] });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1), balanceChanged(2), balanceChanged(3)]);
    proc = await startPipeline(env.config, ['ingest', 'deliver', 'dashboard']);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 2 && c.failed === 1,
    );
    const base = `http://127.0.0.1:${proc.dashboard!.port}/admin`;
    mkdirSync(SCREENSHOT_DIR, { recursive: true });

    browser = await launchChromium();
    // Without credentials the browser gets the 401 and nothing else.
    const anonymous = await browser.newPage();
    await expect(anonymous.goto(`${base}/queues`)).rejects.toThrow(/ERR_INVALID_AUTH_CREDENTIALS/);
    expect((await anonymous.request.get(`${base}/notices`)).status()).toBe(401);
    await anonymous.close();

    const context = await browser.newContext({ httpCredentials: { username: 'ops', password: 'browser-test-pass' }, viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${base}/queues`);
    await page.getByText('deliver-tencent-im-c2c').first().waitFor({ timeout: 15_000 });
    await page.getByText('staging').first().waitFor();
    // The failed tab of the queue lists the dead-lettered job by its event type.
    await page.goto(`${base}/queues/queue/deliver-tencent-im-c2c-wallet_notice?status=failed`);
    await page.getByText('WalletBalanceChanged').first().waitFor({ timeout: 15_000 });
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'bull-board.png') });

    await page.goto(`${base}/notices`);
    const row = page.locator('tr[data-event-id="tx_2:WalletBalanceChanged:10002:COIN"]');
    await row.waitFor({ timeout: 10_000 });
    await expect(row.textContent()).resolves.toContain('90012');
    // The header: the last hour by status, the oldest pending row, the send rate against the limit.
    const glance = page.locator('#glance');
    await glance.locator('.tile').filter({ hasText: 'delivered · tencent_im_c2c (1h)' }).filter({ hasText: /^2/ }).waitFor({ timeout: 10_000 });
    await expect(glance.locator('.tile.bad').filter({ hasText: 'failed · tencent_im_c2c (1h)' }).textContent()).resolves.toMatch(/^1failed/);
    await expect(glance.locator('.tile').filter({ hasText: 'oldest pending' }).textContent()).resolves.toMatch(/^none/);
    await expect(glance.locator('.tile').filter({ hasText: 'sent/s · limit · tencent_im_c2c' }).textContent()).resolves.toMatch(/^\d+(\.\d)? · 200/);
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'notices-failed.png') });

    env.fakeIm.setFaults({});
    await row.locator('input[type=checkbox]').check();
    // The page asks first, with the count; a dismissed question changes nothing.
    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.locator('#requeue').click();
    await page.locator('#status').filter({ hasText: 'nothing changed' }).waitFor({ timeout: 10_000 });
    expect((await ledgerStatusCounts(env.notice)).failed).toBe(1);
    let asked = '';
    page.once('dialog', (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.locator('#requeue').click();
    await page.getByRole('status').filter({ hasText: 'requeued 1' }).waitFor({ timeout: 10_000 });
    expect(asked).toBe('Requeue 1 failed row? tx_2:WalletBalanceChanged:10002:COIN');
    await waitFor(
      async () => env!.fakeIm.delivered().filter((m) => m.toAccount === '10002').length,
      (n) => n === 1,
      15_000,
      'delivery after requeue',
    );
    await page.reload();
    await page.locator('#total').filter({ hasText: '(0)' }).waitFor();
    await glance.locator('.tile').filter({ hasText: 'delivered · tencent_im_c2c (1h)' }).filter({ hasText: /^3/ }).waitFor({ timeout: 10_000 });
    // The C2C chart is scaled to the traffic (a few notices), not to the 12,000/min quota, which the chart names instead.
    const chartSrc = await page.locator('#charts img[src$="/outcomes/tencent_im_c2c.svg"]').getAttribute('src');
    const chart = await (await page.request.get(new URL(chartSrc!, page.url()).href)).text();
    expect(chart).toMatch(/>(1|2|5) \/min<\/text>/);
    expect(chart).toContain('quota 12,000/min, off scale');
    expect(chart).not.toContain('class="reference"');
    // Finding an event goes to its timeline: recorded, the failed attempt with Tencent's code, the requeue by the
    // operator, delivered (the Notices page's own key/value search is retired in favour of the Timeline page).
    await page.locator('#search input[name="event_id"]').fill('tx_2:WalletBalanceChanged:10002:COIN');
    await page.getByRole('button', { name: 'Find on the timeline' }).click();
    await page.waitForURL(/\/admin\/timeline\?event_id=tx_2/);
    const fact = page.locator('li.fact').first();
    await fact.locator('ol.steps li').first().waitFor({ timeout: 10_000 }); // one fact: opened by itself
    const steps = await fact.locator('ol.steps li').allTextContents();
    expect(steps.map((s) => s.split('  ')[1]?.split(' ')[0])).toEqual(['recorded', 'failed', 'requeued', 'delivered']);
    expect(steps[1]).toMatch(/failed by \S+ {2}90012: To_Account does not exist/);
    expect(steps[2]).toMatch(/requeued by ops$/);
    // The payload is not in the answer until asked for, one event at a time.
    await fact.getByRole('button', { name: 'show payload' }).click();
    await fact.locator('pre').filter({ hasText: '"available_after"' }).first().waitFor({ timeout: 10_000 });
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'notices-history.png'), fullPage: true });
    await page.goto(`${base}/notices`);
    // The requeue is in the operator actions, under the basic-auth user.
    await expect(page.locator('#audit tbody tr').first().textContent()).resolves.toMatch(/opsdashboardrequeue_failed11/);
    // An id carrying a right-to-left override is shown with the override named, not obeyed.
    const { AuditLog } = await import('../src/ops/audit-log.ts');
    await new AuditLog(env.notice).record({
      actor: 'ops',
      via: 'cli',
      action: 'requeue_failed',
      matched: 1,
      affected: 0,
      detail: { event_ids: ['evil\u202Etxt.exe'] },
    });
    await page.reload();
    await expect(page.locator('#audit tbody tr').first().textContent()).resolves.toContain('evil[U+202E]txt.exe');
    expect(await glance.locator('.tile').filter({ hasText: 'failed · tencent_im_c2c (1h)' }).count()).toBe(0);
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'notices-after-requeue.png') });
    expect((await ledgerStatusCounts(env.notice)).delivered).toBe(3);
  });

  it("a foreign page can neither write with the operator's credentials nor frame the dashboard; no request leaves the origin", async () => {
    env = await createTestEnv({
      dashboard: { port: 0, auth: { username: 'ops', password: 'browser-test-pass' }, environment: { label: 'staging', color: '#c05621' } },
    });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1)]);
    proc = await startPipeline(env.config, ['ingest', 'deliver', 'dashboard']);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 1,
    );
    await waitFor(
      () => queueActivity(proc!),
      (c) => c.moving === 0,
    );
    const base = `http://127.0.0.1:${proc.dashboard!.port}/admin`;
    // The attacker's origin: another port is another origin (and localhost another site than 127.0.0.1).
    const evil = http.createServer((req, res) => {
      res.setHeader('content-type', 'text/html');
      if (req.url === '/frame') return void res.end(`<iframe id="f" src="${base}/notices"></iframe>`);
      res.end(`<form id="x" method="POST" enctype="text/plain" action="${base}/queues/api/queues/deliver-tencent-im-c2c-wallet_notice/add"><input name='{"name":"junk","data":{},"x":"' value='"}'></form>
        <script>fetch(${JSON.stringify(`${base}/queues/api/queues/deliver-tencent-im-c2c-wallet_notice/add`)}, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: '{"name":"junk","data":{}}' }).finally(() => document.getElementById('x').submit());</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, 'localhost', () => resolve()));
    try {
      browser = await launchChromium();
      const context = await browser.newContext({ httpCredentials: { username: 'ops', password: 'browser-test-pass' } });
      const page = await context.newPage();
      const thirdParty: string[] = [];
      page.on('request', (r) => {
        if (!r.url().startsWith('http://127.0.0.1') && !r.url().startsWith('http://localhost') && !r.url().startsWith('data:')) thirdParty.push(r.url());
      });
      // The operator is logged in (credentials cached for the dashboard origin) and the board renders under its CSP.
      await page.goto(`${base}/queues`);
      await page.getByText('deliver-tencent-im-c2c').first().waitFor({ timeout: 15_000 });
      const before = await jobCounts(proc);
      const attack = await context.newPage();
      const responses: number[] = [];
      attack.on('response', (r) => {
        if (r.url().endsWith('/add')) responses.push(r.status());
      });
      await attack.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
      await waitFor(
        async () => responses.length,
        (n) => n >= 1,
        10_000,
        'the forged requests answered',
      );
      await attack.waitForTimeout(500);
      expect(responses.every((status) => status === 403)).toBe(true);
      expect(await jobCounts(proc)).toBe(before);
      // The frame stays empty: the browser refuses to render the dashboard inside a foreign page.
      const framer = await context.newPage();
      await framer.goto(`http://localhost:${(evil.address() as AddressInfo).port}/frame`);
      await framer.waitForTimeout(1000);
      const frame = framer.frames().find((f) => f !== framer.mainFrame());
      expect(frame).toBeDefined();
      expect(await frame!.locator('header').count()).toBe(0);
      expect(
        await framer
          .frameLocator('#f')
          .locator('body')
          .textContent()
          .catch(() => ''),
      ).not.toContain('notice-service');
      expect(thirdParty).toEqual([]);
    } finally {
      await new Promise((r) => evil.close(r));
    }
  });
});
