import { hostname, userInfo } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { jobCounts, queueActivity, startPipeline } from './helpers/pipeline.ts';
import { spawnNotice } from './helpers/spawn.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
afterEach(async () => {
  await proc?.stop();
  await env?.close();
  proc = env = undefined;
});

const PASSWORD = 'correct-horse-battery';
const auth = (user = 'ops', pass = PASSWORD) => ({ authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` });

async function setup(dashboard: Record<string, unknown> = {}) {
  env = await createTestEnv({
    dashboard: {
      port: 0,
      auth: { username: 'ops', password: PASSWORD, max_failed_logins: 1000 },
      environment: { label: 'test', color: '#b00020' },
      ...dashboard,
    },
  });
  env.fakeIm.setFaults({ not_imported: ['10002'] });
  await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1), balanceChanged(2)]);
  proc = await startPipeline(env.config, ['ingest', 'deliver', 'dashboard']);
  await waitFor(
    () => ledgerStatusCounts(env!.notice),
    (c) => c.delivered === 1 && c.failed === 1,
  );
  // The ledger settles before the queues do: the batch job that carried both rows is still finishing, and the failed
  // row's dead-letter job is added when it ends. Tests that compare job counts need the queues at rest.
  await waitFor(
    () => queueActivity(proc!),
    (c) => c.moving === 0 && c.failed === 1,
  );
  const base = `http://127.0.0.1:${proc.dashboard!.port}/admin`;
  return { base };
}

describe('dashboard', () => {
  it('refuses missing or wrong credentials on every route, pages and APIs alike', async () => {
    const { base } = await setup();
    const routes: Array<[string, string]> = [
      ['GET', '/'],
      ['GET', '/admin'],
      ['GET', '/admin/queues'],
      ['GET', '/admin/queues/api/queues'],
      ['GET', '/admin/notices'],
      ['GET', '/admin/api/notices?event_id=x'],
      ['GET', '/admin/api/notices/failed'],
      ['POST', '/admin/api/notices/requeue'],
      ['GET', '/admin/api/notices/summary'],
      ['GET', '/admin/timeline'],
      ['GET', '/admin/api/notices/timeline?user_id=10001'],
      ['GET', '/admin/errors'],
      ['GET', '/admin/charts/outcomes/tencent_im_c2c.svg'],
      ['GET', '/admin/charts/queues.svg'],
      ['GET', '/admin/api/notices/audit'],
      ['GET', '/admin/api/rejects'],
      ['GET', '/admin/api/rejects/1'],
      ['POST', '/admin/api/rejects/requeue'],
      ['PUT', '/admin/queues/api/queues/deliver-tencent-im-c2c-wallet_notice/retry/failed'],
      ['GET', '/admin/queues/static/nothing.js'],
    ];
    const origin = base.replace('/admin', '');
    for (const [method, path] of routes) {
      for (const headers of [{}, auth('ops', 'wrong-password'), auth('root', PASSWORD), { authorization: 'Bearer x' }]) {
        const res = await fetch(origin + path, { method, headers, redirect: 'manual' });
        expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(await res.text()).toBe('authentication required');
      }
    }
    const ok = await fetch(`${base}/queues/api/queues`, { headers: auth() });
    expect(ok.status).toBe(200);
    // Even when the dashboard may requeue, bull-board offers no job or queue action (edit, retry, add, clean…): they
    // all go around the ledger, so the board is for looking.
    const board = (await ok.json()) as { queues: Array<{ name: string; readOnlyMode: boolean; description: string }> };
    expect(board.queues.every((q) => q.readOnlyMode)).toBe(true);
    // A queue that may stay empty says why (issue 47: "the always-empty catch-all queue").
    const shared = board.queues.find((q) => q.name === 'deliver-tencent-im-c2c')!;
    expect(shared.description).toMatch(/The catch-all for kinds without a queue of their own \(.*room_notice.*\); it may stay empty\./);
    const own = board.queues.find((q) => q.name === 'deliver-tencent-im-c2c-room_notice')!;
    expect(own.description).not.toMatch(/catch-all/);
  });

  it('finds events by event_id and user_id, lists failed rows with their error, requeues one', async () => {
    const { base } = await setup();
    const byEvent = await (
      await fetch(`${base}/api/notices?event_id=${encodeURIComponent('tx_1:WalletBalanceChanged:10001:COIN')}`, { headers: auth() })
    ).json();
    expect(byEvent.rows).toHaveLength(1);
    expect(byEvent.rows[0]).toMatchObject({ status: 'delivered', user_id: '10001', notice_kind: 'wallet_notice' });
    const byUser = await (await fetch(`${base}/api/notices?user_id=10002`, { headers: auth() })).json();
    expect(byUser.rows[0]).toMatchObject({ status: 'failed', last_error_code: '90012' });
    const failed = await (await fetch(`${base}/api/notices/failed?page=1&page_size=10`, { headers: auth() })).json();
    expect(failed.total).toBe(1);
    expect(failed.rows[0].last_error).toContain('not imported');
    // Lists and searches never carry what the user was told; one event's payload comes only when asked for.
    for (const answer of [byEvent, byUser, failed]) {
      expect(JSON.stringify(answer)).not.toContain('available_after');
      expect(answer.rows[0].payload_bytes).toBeGreaterThan(50);
    }
    const one = failed.rows[0];
    const payload = await (
      await fetch(
        `${base}/api/notices/payload?${new URLSearchParams({ source_name: one.source_name, app_code: one.app_code, source_event_id: one.source_event_id, channel: one.channel })}`,
        { headers: auth() },
      )
    ).json();
    expect(JSON.parse(payload.payload)).toMatchObject({ available_after: expect.any(Number) });
    expect((await fetch(`${base}/api/notices/payload?source_name=x`, { headers: auth() })).status).toBe(400);

    // A form post (not JSON) is refused: the CSRF guard.
    const form = await fetch(`${base}/api/notices/requeue`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'keys=x',
    });
    expect(form.status).toBe(415);

    env!.fakeIm.setFaults({});
    const row = failed.rows[0];
    const res = await fetch(`${base}/api/notices/requeue`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({
        keys: [
          { source_name: row.source_name, app_code: row.app_code, source_event_id: row.source_event_id, channel: row.channel },
          { source_name: 'wallet_outbox', app_code: 'lalu', source_event_id: 'nope', channel: 'tencent_im_c2c' },
        ],
      }),
    });
    expect(await res.json()).toEqual({ requeued: [row.source_event_id], skipped: [{ source_event_id: 'nope', reason: 'no such ledger row' }] });
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 2,
      10_000,
      'requeued event delivered',
    );
    // The audit log says who did it, from where, and what it touched.
    const audit = await (await fetch(`${base}/api/notices/audit`, { headers: auth() })).json();
    expect(audit.actions).toEqual([
      expect.objectContaining({
        actor: 'ops',
        via: 'dashboard',
        action: 'requeue_failed',
        matched: 2,
        affected: 1,
        detail: expect.objectContaining({ event_ids: [row.source_event_id, 'nope'], skipped: 1, state: 'done' }),
      }),
    ]);
    expect(env!.fakeIm.delivered().filter((m) => m.toAccount === '10002')).toHaveLength(1);
  });

  it('read-only mode is enforced by the server, not just hidden buttons', async () => {
    const { base } = await setup({ read_only: true });
    const retry = await fetch(`${base}/queues/api/queues/deliver-tencent-im-c2c-wallet_notice/retry/failed`, { method: 'PUT', headers: auth() });
    expect(retry.status).toBe(405);
    const clean = await fetch(`${base}/queues/api/queues/deliver-tencent-im-c2c-wallet_notice/clean/failed`, { method: 'PUT', headers: auth() });
    expect(clean.status).toBe(405);
    const requeue = await fetch(`${base}/api/notices/requeue`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ keys: [] }),
    });
    expect(requeue.status).toBe(405);
    const queues = await (await fetch(`${base}/queues/api/queues`, { headers: auth() })).json();
    // C2C: one queue per prioritised kind, most urgent first, and the shared one; then the inbox's and push's (every
    // registered channel, so a disabled channel's leftover jobs stay visible); all read-only.
    expect(queues.queues.map((q: { name: string }) => q.name)).toEqual([
      'deliver-tencent-im-c2c-room_notice',
      'deliver-tencent-im-c2c-vip_notice',
      'deliver-tencent-im-c2c-activity_notice',
      'deliver-tencent-im-c2c-wallet_notice',
      'deliver-tencent-im-c2c',
      'deliver-inbox',
      'deliver-tencent-push',
    ]);
    expect(queues.queues.every((q: { readOnlyMode: boolean }) => q.readOnlyMode)).toBe(true);
    // Job data shown is the ledger key, nothing else.
    const failedJobs = await (
      await fetch(`${base}/queues/api/queues?activeQueue=deliver-tencent-im-c2c-wallet_notice&status=failed&page=1`, { headers: auth() })
    ).json();
    const job = failedJobs.queues.find((q: { name: string }) => q.name === 'deliver-tencent-im-c2c-wallet_notice').jobs[0];
    expect(Object.keys(job.data).sort()).toEqual(['appCode', 'channel', 'eventType', 'sourceEventId', 'sourceName']);
  });

  it('inspect and requeue work as CLI commands for scripts', async () => {
    await setup();
    const inspect = spawnNotice(['inspect', 'tx_2:WalletBalanceChanged:10002:COIN', '--output', 'json', '--config', env!.configFile]);
    expect(await inspect.exited).toBe(0);
    const rows = JSON.parse(inspect.output().slice(inspect.output().indexOf('[')));
    expect(rows[0]).toMatchObject({ status: 'failed', last_error_code: '90012', job: { state: 'failed' } });

    const dry = spawnNotice(['requeue', '--status', 'failed', '--since', '1h', '--dry-run', '--output', 'json', '--config', env!.configFile]);
    expect(await dry.exited).toBe(0);
    expect(JSON.parse(dry.output().slice(dry.output().indexOf('{')))).toMatchObject({ matched: 1, requeued: 0, dry_run: true });
    expect((await ledgerStatusCounts(env!.notice)).failed).toBe(1);

    env!.fakeIm.setFaults({});
    // Without a terminal to ask on, a real requeue needs --yes: it says how many match and changes nothing.
    const unasked = spawnNotice(['requeue', '--status', 'failed', '--config', env!.configFile]);
    expect(await unasked.exited).toBe(2);
    expect(unasked.output()).toContain('nothing changed: 1 row match; run again with --yes');
    // Narrowed to another user or code, nothing matches.
    const other = spawnNotice(['requeue', '--status', 'failed', '--user', '10099', '--dry-run', '--config', env!.configFile]);
    expect(await other.exited).toBe(0);
    expect(other.output()).toContain('would requeue 0');
    expect((await ledgerStatusCounts(env!.notice)).failed).toBe(1);
    const real = spawnNotice([
      'requeue',
      '--status',
      'failed',
      '--source',
      'wallet_outbox',
      '--user',
      '10002',
      '--code',
      '90012',
      '--yes',
      '--output',
      'json',
      '--config',
      env!.configFile,
    ]);
    expect(await real.exited).toBe(0);
    expect(JSON.parse(real.output().slice(real.output().indexOf('{')))).toMatchObject({ matched: 1, requeued: 1 });
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => c.delivered === 2,
      10_000,
      'delivered after CLI requeue',
    );
    // Only the real run is an operator action; the dry run changed nothing.
    const [actions] = await env!.notice.query<any[]>('SELECT actor, via, action, matched, affected, detail FROM notice_operator_actions');
    expect(actions).toEqual([
      expect.objectContaining({ actor: `${userInfo().username}@${hostname()}`, via: 'cli', action: 'requeue_failed', matched: 1, affected: 1 }),
    ]);
    expect(JSON.parse(actions[0].detail)).toMatchObject({ status: 'failed', source: 'wallet_outbox', skipped: 0, state: 'done' });
    const audit = spawnNotice(['audit', '--limit', '5', '--output', 'json', '--config', env!.configFile]);
    expect(await audit.exited).toBe(0);
    expect(JSON.parse(audit.output().slice(audit.output().indexOf('[')))).toEqual([
      expect.objectContaining({ actor: `${userInfo().username}@${hostname()}`, via: 'cli', action: 'requeue_failed', matched: 1, affected: 1 }),
    ]);
    const timeline = spawnNotice(['inspect', 'tx_2:WalletBalanceChanged:10002:COIN', '--output', 'json', '--config', env!.configFile]);
    expect(await timeline.exited).toBe(0);
    const steps = JSON.parse(timeline.output().slice(timeline.output().indexOf('[')))[0].timeline.map(
      (s: { event: string; actor: string }) => `${s.event}:${s.event === 'requeued' ? s.actor : ''}`,
    );
    expect(steps).toEqual(['recorded:', 'failed:', `requeued:${userInfo().username}@${hostname()}`, 'delivered:']);

    const bad = spawnNotice(['requeue', '--status', 'delivered', '--config', env!.configFile]);
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toContain('only "failed"');
  }, 300_000); // six CLI processes: seconds each on a starved box
});

describe('dashboard hardening (plain HTTP)', () => {
  it('sends no-frame, no-sniff, no-referrer and no-store headers on pages, bull-board and JSON, and no third-party asset', async () => {
    const { base } = await setup();
    for (const path of ['/queues', '/queues/api/queues', '/notices', '/api/notices/failed']) {
      const res = await fetch(base + path, { headers: auth() });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('x-frame-options'), path).toBe('DENY');
      expect(res.headers.get('content-security-policy'), path).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff');
      expect(res.headers.get('referrer-policy'), path).toBe('no-referrer');
      expect(res.headers.get('cache-control'), path).toBe('no-store');
    }
    const board = await (await fetch(`${base}/queues`, { headers: auth() })).text();
    expect(board).not.toMatch(/https?:\/\//);
    expect(board).toContain('static/js/');
  });

  it('refuses cross-site writes and non-JSON bodies; pipeline-corrupting bull-board calls are disabled', async () => {
    const { base } = await setup();
    const q = `${base}/queues/api/queues/deliver-tencent-im-c2c-wallet_notice`;
    const jobsBefore = await jobCounts(proc!);
    // What a foreign page's form or no-cors fetch sends with the browser's cached credentials.
    const crossSite = await fetch(`${q}/add`, {
      method: 'POST',
      headers: { ...auth(), origin: 'http://evil.example', 'sec-fetch-site': 'cross-site', 'content-type': 'text/plain' },
      body: '{"name":"junk","data":{}}',
    });
    expect(crossSite.status).toBe(403);
    const crossSiteRequeue = await fetch(`${base}/api/notices/requeue`, {
      method: 'POST',
      headers: { ...auth(), origin: 'http://evil.example', 'content-type': 'application/json' },
      body: '{"keys":[]}',
    });
    expect(crossSiteRequeue.status).toBe(403);
    const plainText = await fetch(`${base}/api/notices/requeue`, { method: 'POST', headers: { ...auth(), 'content-type': 'text/plain' }, body: '{"keys":[]}' });
    expect(plainText.status).toBe(415);
    for (const [method, path] of [
      ['POST', '/add'],
      ['PUT', '/obliterate'],
      ['PUT', '/empty'],
      ['PATCH', '/some-job/update-data'],
      ['PUT', '/concurrency'],
      ['PUT', '/rate-limit'],
    ] as const) {
      const res = await fetch(q + path, {
        method,
        headers: { ...auth(), 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
        body: '{"name":"junk","data":{},"concurrency":1,"max":1,"duration":1000}',
      });
      expect(res.status, path).toBe(403);
      expect((await res.json()).error, path).toMatch(/disabled in notice-service/);
    }
    expect(await jobCounts(proc!)).toBe(jobsBefore);
    // Same-origin operator actions still work.
    const retry = await fetch(`${q}/retry/failed`, { method: 'PUT', headers: { ...auth(), 'sec-fetch-site': 'same-origin' } });
    expect(retry.status).toBeLessThan(500);
  });

  it('answers 400 to malformed JSON and 413 to an oversize body, accepts a lower-case scheme name, and throttles password guessing', async () => {
    const { base } = await setup({ auth: { username: 'ops', password: PASSWORD, max_failed_logins: 5 } });
    const post = (body: string) => fetch(`${base}/api/notices/requeue`, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body });
    expect((await post('{"keys": [')).status).toBe(400);
    expect((await post(JSON.stringify({ keys: 'x'.repeat(300_000) }))).status).toBe(413);
    const lower = await fetch(`${base}/api/notices/failed`, { headers: { authorization: auth().authorization.replace('Basic', 'basic') } });
    expect(lower.status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await fetch(`${base}/api/notices/failed`, { headers: auth('ops', `guess-${i}`) })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
  });
});
