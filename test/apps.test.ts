import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows } from './helpers/outbox.ts';
import { activityEvent } from './helpers/activity.ts';
import { startPipeline } from './helpers/pipeline.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { configSchema } from '../src/composition/schema.ts';
import { runRequeue } from '../src/ops/requeue-run.ts';
import { configDeprecations, parseConfigText } from '../src/composition/load.ts';

/**
 * Many apps on one deployment: each app_code goes out through its own Tencent app (SDKAppID, UserSig), and a fact of
 * an app the deployment does not serve reaches no channel at all.
 */
let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
afterEach(async () => {
  await proc?.stop();
  await env?.close();
  proc = env = undefined;
});

const HALA = { sdkAppId: 1400000002, secretKey: 'hala-secret-key-0000000000000001', adminIdentifier: 'hala_admin' };
const ZOZO = { sdkAppId: 1400000003, secretKey: 'zozo-secret-key-0000000000000002', adminIdentifier: 'administrator' };
const ledger = async () =>
  (
    await env!.notice.query<any[]>('SELECT app_code, channel, status, last_error_code FROM notice_delivery_events ORDER BY app_code, channel, source_event_id')
  )[0];

describe('apps', () => {
  it('each app through its own Tencent app, once; an unknown app fails UNKNOWN_APP on every channel with nothing sent; a requeue after adding it sends once', async () => {
    env = await createTestEnv(
      {
        tencent_im: { apps: { hala: { sdk_app_id: HALA.sdkAppId, secret_key: HALA.secretKey, admin_identifier: HALA.adminIdentifier } } },
        activity_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s', max_retry_count: 3 },
        tencent_push: { enabled: true, batch_linger: '10ms' },
        inbox: { enabled: true },
      },
      { fakeImApps: [HALA, ZOZO] },
    );
    // The same event ids in three apps: an owner's key is (app_code, event_id), so these are nine different facts.
    const wallet = (app: string) => [1, 2, 3].map((n) => ({ ...balanceChanged(n), app_code: app }));
    await insertWalletRows(env.owner, env.config.wallet_database, [...wallet('lalu'), ...wallet('hala'), ...wallet('zozo')]);
    const activity = (app: string) => [1, 2].map((n) => ({ ...activityEvent(n), app_code: app }));
    for (const app of ['lalu', 'hala', 'zozo']) {
      await env.owner.query(
        `INSERT INTO \`${env.config.activity_database}\`.activity_outbox (app_code, event_id, event_type, user_id, payload, created_at_ms) VALUES ?`,
        [activity(app).map((r) => [app, r.event_id, r.event_type, r.user_id, JSON.stringify(r.payload), r.created_at_ms])],
      );
    }
    proc = await startPipeline(env.config);
    // wallet: C2C; activity: C2C + inbox + push → 3 + 2 × 3 = 9 rows per app.
    const final = (rows: any[]) => rows.filter((r) => ['delivered', 'failed'].includes(r.status)).length;
    await waitFor(ledger, (rows) => rows.length === 27 && final(rows) === 27, 30_000, 'every row final');
    const rows = await ledger();
    expect(rows.filter((r) => r.app_code !== 'zozo').every((r) => r.status === 'delivered')).toBe(true);
    expect(
      rows
        .filter((r) => r.app_code === 'zozo')
        .map((r) => `${r.channel}:${r.status}:${r.last_error_code}`)
        .sort(),
    ).toEqual(
      [
        ...Array(2).fill('inbox:failed:UNKNOWN_APP'),
        ...Array(5).fill('tencent_im_c2c:failed:UNKNOWN_APP'),
        ...Array(2).fill('tencent_push:failed:UNKNOWN_APP'),
      ].sort(),
    );
    // Every C2C message and push went through the app its fact belongs to; zozo's Tencent app got nothing.
    const appOf = (sdkAppId: number) => ({ 1400000001: 'lalu', [HALA.sdkAppId]: 'hala', [ZOZO.sdkAppId]: 'zozo' })[sdkAppId];
    const messages = env.fakeIm.delivered();
    expect(messages).toHaveLength(10);
    for (const m of messages) expect(appOf(m.sdkAppId)).toBe(JSON.parse(m.data).app_code);
    const pushedByApp: Record<string, number> = {};
    for (const p of env.fakeIm.pushes()) pushedByApp[appOf(p.sdkAppId)!] = (pushedByApp[appOf(p.sdkAppId)!] ?? 0) + p.accounts.length;
    expect(pushedByApp).toEqual({ lalu: 2, hala: 2 });
    expect(messages.filter((m) => m.sdkAppId === ZOZO.sdkAppId)).toHaveLength(0);
    const [inbox] = await env.notice.query<any[]>('SELECT app_code, COUNT(*) AS n FROM notice_inbox_items GROUP BY app_code ORDER BY app_code');
    expect(inbox.map((r) => `${r.app_code}:${r.n}`)).toEqual(['hala:2', 'lalu:2']);
    const metrics = await proc.metrics.render();
    expect(metrics).toMatch(/notice_unknown_app_total\{channel="tencent_im_c2c"\} 5/);
    expect(metrics).toMatch(/notice_send_rate_limit_per_second\{channel="tencent_im_c2c",app="hala"\} 0/);

    // The operator adds zozo and requeues: each of its rows goes out once, through zozo's own account.
    await proc.stop();
    const withZozo = configSchema.parse({
      ...env.config,
      apps: { ...env.config.apps, zozo: { tencent_im: { sdk_app_id: ZOZO.sdkAppId, secret_key: ZOZO.secretKey } } },
    });
    proc = await startPipeline(withZozo, ['deliver']);
    const run = await runRequeue({ pool: env.notice, queues: proc.queues, maxRetryFor: () => 3 }, { actor: 'test', via: 'cli' }, { filter: {}, detail: {} });
    expect(run.requeued).toHaveLength(9);
    await waitFor(ledger, (all) => all.every((r) => r.status === 'delivered'), 30_000, 'zozo delivered after the requeue');
    expect(
      env.fakeIm
        .delivered()
        .filter((m) => m.sdkAppId === ZOZO.sdkAppId)
        .map((m) => JSON.parse(m.data).app_code),
    ).toEqual(Array(5).fill('zozo'));
    expect(env.fakeIm.delivered()).toHaveLength(15);
  });

  it('a config that names no app, or one twice, or one Tencent app for two app codes, is refused naming the key', () => {
    const base = 'mysql: { url: "mysql://x/y" }\nredis: { url: "redis://x" }\n';
    expect(() => parseConfigText(`${base}tencent_im: { enabled: false }\n`, 'c.yaml', {})).toThrow(
      /apps: required — list the app_codes this deployment serves/,
    );
    expect(() =>
      parseConfigText(
        `${base}apps: { a: { tencent_im: { sdk_app_id: 7, secret_key: s } }, b: { tencent_im: { sdk_app_id: 7, secret_key: t } } }\n`,
        'c.yaml',
        {},
      ),
    ).toThrow(/apps\.b\.tencent_im\.sdk_app_id: 7 is also a's/);
    expect(() => parseConfigText(`${base}apps: { a: { tencent_im: { sdk_app_id: 7 } } }\n`, 'c.yaml', {})).toThrow(/apps\.a\.tencent_im\.secret_key/);
    expect(() => parseConfigText(`${base}tencent_im: { enabled: true }\napps: { a: {} }\n`, 'c.yaml', {})).toThrow(/no app has Tencent IM credentials/);
    const parsed = parseConfigText(
      `${base}tencent_im: { enabled: true }\napps: { a: { tencent_im: { sdk_app_id: 7, secret_key: s, rate_limit_per_second: 50 } } }\n`,
      'c.yaml',
      {},
    );
    expect(parsed.apps.a!.tencent_im!.rate_limit_per_second).toBe(50);
    expect(parsed.apps.a!.redis_tag).toBe('own');
  });

  it('the keys of earlier releases (tencent_im.app_code, tencent_im.apps) still work, each with a deprecation note, and clash with apps', () => {
    const base = 'mysql: { url: "mysql://x/y" }\nredis: { url: "redis://x" }\n';
    const legacy = `${base}tencent_im: { enabled: true, app_code: lalu, sdk_app_id: 1400000001, secret_key: s, apps: { hala: { sdk_app_id: 2, secret_key: t } } }\n`;
    const config = parseConfigText(legacy, 'c.yaml', {});
    // The shorthand app keeps the deployment's Redis prefix (its keys and queues do not move); hala gets its own tag.
    expect(config.apps).toEqual({
      lalu: { redis_tag: 'deployment', tencent_im: { sdk_app_id: 1400000001, secret_key: 's' } },
      hala: { redis_tag: 'own', tencent_im: { sdk_app_id: 2, secret_key: 't' } },
    });
    expect(configDeprecations(config)).toEqual([
      'tencent_im.app_code, sdk_app_id and secret_key are read as apps.lalu (redis_tag: deployment, tencent_im: { sdk_app_id, secret_key }); move them there',
      'tencent_im.apps.<app_code> is read as apps.<app_code>.tencent_im; move each app there',
    ]);
    expect(() =>
      parseConfigText(
        `${base}tencent_im: { apps: { a: { sdk_app_id: 1, secret_key: s } } }\napps: { a: { tencent_im: { sdk_app_id: 1, secret_key: s } } }\n`,
        'c.yaml',
        {},
      ),
    ).toThrow(/apps\.a\.tencent_im: also set by tencent_im\.apps\.a; configure the app in one place/);
    expect(() => parseConfigText(`${base}tencent_im: { enabled: true, app_code: lalu }\n`, 'c.yaml', {})).toThrow(
      /tencent_im\.secret_key: required when tencent_im\.enabled is true/,
    );
    expect(configDeprecations(parseConfigText(`${base}apps: { lalu: {} }\n`, 'c.yaml', {}))).toEqual([]);
  });
});

describe('apps under backpressure', () => {
  it("one app's full queues park its facts in the ledger without a job; another app's notices go at once; every fact is sent once", async () => {
    env = await createTestEnv(
      {
        // lalu is slow (its quota: 20/s) and its backlog overflows max_queued_jobs; hala has no limit.
        tencent_im: {
          rate_limit_per_second: 20,
          apps: { hala: { sdk_app_id: HALA.sdkAppId, secret_key: HALA.secretKey, admin_identifier: HALA.adminIdentifier, rate_limit_per_second: 0 } },
        },
        wallet_notice_worker: {
          enabled: true,
          poll_interval: '50ms',
          batch_size: 50,
          lock_ttl: '3s',
          gap_grace: '5s',
          max_retry_count: 3,
          // Jobs, not rows: a poll of 50 is 4 batch jobs (deliver.rows_per_job 16).
          max_queued_jobs: 3,
        },
        reconciler: { interval: '500ms', pending_grace: '1s', batch_size: 100 },
      },
      { fakeImApps: [HALA] },
    );
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 300 }, (_, i) => ({ ...balanceChanged(i + 1), app_code: 'lalu' })),
    );
    proc = await startPipeline(env.config);
    // lalu's queue fills up and stays full: its later facts are recorded with no job.
    const parked = async () => proc!.ingest!.pollers[0]!.stats.parked;
    await waitFor(parked, (n) => n > 0, 15_000, 'lalu facts parked');
    const hala = Array.from({ length: 30 }, (_, i) => ({ ...balanceChanged(1000 + i), app_code: 'hala', event_id: `hala_${i}` }));
    const writtenAt = Date.now();
    await insertWalletRows(env.owner, env.config.wallet_database, hala);
    await waitFor(
      async () => env!.fakeIm.delivered().filter((m) => m.sdkAppId === HALA.sdkAppId).length,
      (n) => n === 30,
      10_000,
      "hala's notices while lalu is backed up",
    );
    const halaDoneMs = Date.now() - writtenAt;
    const laluSoFar = env.fakeIm.delivered().filter((m) => m.sdkAppId === 1400000001).length;
    expect(laluSoFar).toBeLessThan(300); // lalu's backlog was still draining when hala's were all sent
    expect(halaDoneMs).toBeLessThan(5_000);
    // lalu's parked facts get their jobs from the reconciler as its queue drains: each sent once.
    await waitFor(
      async () => env!.fakeIm.delivered().filter((m) => m.sdkAppId === 1400000001).length,
      (n) => n === 300,
      60_000,
      'lalu drained',
    );
    expect(new Set(env.fakeIm.delivered().map((m) => JSON.parse(m.data).event_id)).size).toBe(330);
    expect(env.fakeIm.getStats().duplicates).toBe(0);
  });
});
