import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { activityEvent, insertActivityRows } from './helpers/activity.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { spawnNotice } from './helpers/spawn.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

/** "What failed in the last hour, and why" across every user: `notice-service failures` (issue 47 §1). */
let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
afterEach(async () => {
  await proc?.stop();
  await env?.close();
  proc = env = undefined;
});

const cli = async (args: string[]) => {
  const p = spawnNotice([...args, '--config', env!.configFile]);
  const code = await p.exited;
  return { code, out: p.output() };
};
const json = (out: string) => JSON.parse(out.slice(out.indexOf('{')));

describe('notice-service failures', () => {
  it('groups every user’s failures by channel and code with what to do, pages the rows newest first, and prints the requeue for exactly them', async () => {
    env = await createTestEnv({
      activity_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s', max_retry_count: 3 },
      tencent_push: { enabled: true, batch_linger: '0ms' },
    });
    // 12 wallet users of whom 5 were never imported (C2C 90012); 6 activity users, 4 of them unknown to push (70107).
    const walletUsers = Array.from({ length: 12 }, (_, i) => String(71_000 + i));
    const activityUsers = Array.from({ length: 6 }, (_, i) => String(72_000 + i));
    env.fakeIm.setFaults({ not_imported: walletUsers.slice(0, 5) });
    env.fakeIm.setPushFaults({ not_imported: activityUsers.slice(0, 4) });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      walletUsers.map((user, i) => ({ ...balanceChanged(i + 1), user_id: user, event_id: `fl_${i}` })),
    );
    await insertActivityRows(
      env.owner,
      env.config.activity_database,
      activityUsers.map((user, i) => ({ ...activityEvent(i + 1), user_id: user })),
    );
    proc = await startPipeline(env.config);
    // 12 + 6 C2C, 6 pushes: 24 rows, 9 failed.
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => (c.delivered ?? 0) + (c.failed ?? 0) === 24,
      30_000,
      'every row final',
    );

    const text = await cli(['failures']);
    expect(text.code, text.out).toBe(0);
    expect(text.out).toMatch(/^9 failed rows \(times in UTC\)$/m);
    expect(text.out).toMatch(/^ +5 {2}tencent_im_c2c {2}90012 {2}last .*$/m);
    expect(text.out).toMatch(/^ +4 {2}tencent_push {2}70107 {2}last .*$/m);
    expect(text.out).toMatch(/what to do: /);
    expect(text.out).toContain('requeue exactly these: notice-service requeue --status failed --since 1h');

    const first = await cli(['failures', '--limit', '4', '--output', 'json']);
    expect(first.code, first.out).toBe(0);
    const page1 = json(first.out);
    expect(page1.groups.map((g: any) => `${g.channel}:${g.code}:${g.count}`)).toEqual(['tencent_im_c2c:90012:5', 'tencent_push:70107:4']);
    expect(page1.groups[0].action).toEqual(expect.any(String));
    expect(page1.rows).toHaveLength(4);
    const seen = new Set<string>(page1.rows.map((r: any) => `${r.event_id}/${r.channel}`));
    let next = page1.next as string | null;
    while (next) {
      const page = json((await cli(['failures', '--limit', '4', '--after', next, '--output', 'json'])).out);
      for (const r of page.rows) seen.add(`${r.event_id}/${r.channel}`);
      next = page.next;
    }
    expect(seen.size).toBe(9); // every failed row once over the pages, across users

    const push = json((await cli(['failures', '--channel', 'tencent_push', '--kind', 'activity_notice', '--output', 'json'])).out);
    expect(push.rows.map((r: any) => r.user_id).sort()).toEqual(activityUsers.slice(0, 4));
    expect(push.requeue).toBe('notice-service requeue --status failed --since 1h --channel tencent_push --kind activity_notice');
    // "Requeue these" is that line: its dry run matches exactly the rows shown.
    const dry = await cli([
      'requeue',
      '--status',
      'failed',
      '--since',
      '1h',
      '--channel',
      'tencent_push',
      '--kind',
      'activity_notice',
      '--dry-run',
      '--output',
      'json',
    ]);
    expect(json(dry.out)).toMatchObject({ matched: 4, requeued: 0, dry_run: true });

    for (const [args, message] of [
      [['failures', '--status', 'lost'], /--status must be one of .*failed.*, got "lost"/],
      [['failures', '--after', 'nonsense'], /--after must be the "next" token/],
      [['failures', '--kind', 'wallet'], /--kind must be one of/],
    ] as const) {
      const r = await cli([...args]);
      expect(r.code, r.out).toBe(2);
      expect(r.out).toMatch(message);
    }
  }, 180_000);
});

describe('the Failures page', () => {
  it('shows every user’s failures by code with what to do, filters by a click, and requeues exactly the filter after a confirmation', async () => {
    const { launchChromium } = await import('./helpers/browser.ts');
    env = await createTestEnv({ dashboard: { port: 0, auth: { username: 'ops', password: 'failures-page-pass' } } });
    const users = Array.from({ length: 8 }, (_, i) => String(73_000 + i));
    env.fakeIm.setFaults({ not_imported: users.slice(0, 3) });
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      users.map((user, i) => ({ ...balanceChanged(i + 1), user_id: user, event_id: `fp_${i}` })),
    );
    proc = await startPipeline(env.config, ['ingest', 'deliver', 'dashboard']);
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 5 && c.failed === 3,
      30_000,
      '5 delivered, 3 failed',
    );
    const browser = await launchChromium();
    try {
      const context = await browser.newContext({ httpCredentials: { username: 'ops', password: 'failures-page-pass' } });
      const page = await context.newPage();
      await page.goto(`http://127.0.0.1:${proc.dashboard!.port}/admin/failures`);
      const group = page.locator('#groups tbody tr').first();
      await group.waitFor({ timeout: 20_000 });
      expect(await group.locator('td').allTextContents()).toEqual([
        '3',
        'tencent_im_c2c',
        '90012',
        expect.any(String),
        expect.stringMatching(/./),
        expect.stringMatching(/./),
      ]);
      expect(await page.locator('#rows tbody tr').count()).toBe(3);
      await expect(page.locator('#summary').textContent()).resolves.toMatch(/^3 failed rows since 1h/);
      // The code is a link to the same question narrowed to it.
      await group.locator('a').click();
      await page.waitForURL(/code=90012/);
      const button = page.locator('#requeue');
      await button.waitFor({ state: 'visible', timeout: 20_000 });
      expect(await button.textContent()).toBe('Requeue these 3');
      env.fakeIm.setFaults({});
      // A dismissed confirmation changes nothing; an accepted one requeues exactly the three.
      page.once('dialog', (d) => void d.dismiss());
      await button.click();
      expect((await ledgerStatusCounts(env.notice)).failed).toBe(3);
      page.once('dialog', (d) => void d.accept());
      await button.click();
      await page.locator('#requeue-status').filter({ hasText: 'requeued 3 of 3' }).waitFor({ timeout: 20_000 });
      await waitFor(
        () => ledgerStatusCounts(env!.notice),
        (c) => c.delivered === 8,
        30_000,
        'the three delivered after the requeue',
      );
      // The chart counts the three failures in the minute they happened, though their rows are delivered now.
      const svg = await (await context.request.get(`http://127.0.0.1:${proc.dashboard!.port}/admin/charts/outcomes/tencent_im_c2c.svg?hours=1`)).text();
      const failedYs = /data-series="failed"[^>]*points="([^"]+)"/
        .exec(svg)![1]!
        .split(' ')
        .map((p) => Number(p.split(',')[1]));
      expect(failedYs.filter((y) => y < 144).length).toBeGreaterThanOrEqual(1); // above the zero line (y 144)
      const [actions] = await env.notice.query<any[]>("SELECT via, action, matched, affected FROM notice_operator_actions WHERE via = 'dashboard'");
      expect(actions).toEqual([expect.objectContaining({ via: 'dashboard', action: 'requeue_failed', matched: 3, affected: 3 })]);
    } finally {
      await browser.close();
    }
  }, 180_000);
});
