import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import type { NoticeProcess } from '../src/app/run-roles.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOT_DIR = join(process.cwd(), '.tmp', 'screenshots');

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
    env = await createTestEnv({ dashboard: { port: 0, auth: { username: 'ops', password: 'browser-test-pass' }, environment: { label: 'staging', color: '#c05621' } } });
    env.fakeIm.setFaults({ not_imported: ['10002'] });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1), balanceChanged(2), balanceChanged(3)]);
    proc = await startPipeline(env.config, ['ingest', 'deliver', 'dashboard']);
    await waitFor(() => ledgerStatusCounts(env!.notice), (c) => c.delivered === 2 && c.failed === 1);
    const base = `http://127.0.0.1:${proc.dashboard!.port}/admin`;
    mkdirSync(SCREENSHOT_DIR, { recursive: true });

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
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
    await page.goto(`${base}/queues/queue/deliver-tencent-im-c2c?status=failed`);
    await page.getByText('WalletBalanceChanged').first().waitFor({ timeout: 15_000 });
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'bull-board.png') });

    await page.goto(`${base}/notices`);
    const row = page.locator('tr[data-event-id="tx_2:WalletBalanceChanged:10002:COIN"]');
    await row.waitFor({ timeout: 10_000 });
    await expect(row.textContent()).resolves.toContain('90012');
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'notices-failed.png') });

    env.fakeIm.setFaults({});
    await row.locator('input[type=checkbox]').check();
    await page.getByRole('button', { name: 'Requeue selected' }).click();
    await page.getByRole('status').filter({ hasText: 'requeued 1' }).waitFor({ timeout: 10_000 });
    await waitFor(async () => env!.fakeIm.delivered().filter((m) => m.toAccount === '10002').length, (n) => n === 1, 15_000, 'delivery after requeue');
    await page.reload();
    await page.locator('#total').filter({ hasText: '(0)' }).waitFor();
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'notices-after-requeue.png') });
    expect((await ledgerStatusCounts(env.notice)).delivered).toBe(3);
  });
});
