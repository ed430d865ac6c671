import mysql from 'mysql2/promise';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows } from './helpers/outbox.ts';
import { PrivateMariaDb } from './helpers/mariadb-server.ts';
import { startPipeline } from './helpers/pipeline.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { createOwnerFixtures } from '../src/db/owner-fixtures.ts';
import { configSchema } from '../src/composition/schema.ts';

/**
 * An owner outbox split over two MySQL servers (the shared one and a private mariadbd), three apps: each shard has
 * its own cursor, every notice reaches its own app's account once, and one shard down stalls only itself.
 */
let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let far: PrivateMariaDb | undefined;
afterEach(async () => {
  await proc?.stop();
  await env?.close();
  await far?.destroy();
  proc = env = far = undefined;
});

const HALA = { sdkAppId: 1400000002, secretKey: 'hala-secret-key-0000000000000001', adminIdentifier: 'administrator' };
const rows = (app: string, from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => ({ ...balanceChanged(from + i), app_code: app }));

describe('owner outboxes on other servers, in shards', () => {
  it('reads each shard with its own cursor, sends each app through its own account once, and a shard that is down stalls only itself', async () => {
    far = new PrivateMariaDb();
    await far.start();
    const farPool = mysql.createPool({ uri: far.url, connectionLimit: 2 });
    try {
      await createOwnerFixtures(farPool, configSchema.parse({ mysql: { url: far.url }, redis: { url: 'redis://127.0.0.1' } }), {
        wallet: 'far_wallet',
        room: 'far_room',
        activity: 'far_activity',
      });
      env = await createTestEnv(
        {
          tencent_im: { apps: { hala: { sdk_app_id: HALA.sdkAppId, secret_key: HALA.secretKey } } },
          wallet_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s', max_retry_count: 3, stall_threshold: '1s' },
        },
        { fakeImApps: [HALA] },
      );
      const config = {
        ...env.config,
        wallet_shards: [
          { name: 'near', database: env.config.wallet_database },
          { name: 'far', mysql_url: far.url, database: 'far_wallet' },
        ],
      };
      await insertWalletRows(env.owner, env.config.wallet_database, [...rows('lalu', 1, 20), ...rows('hala', 1, 10)]);
      // zozo is served by no one here; tx_40 of lalu is in both shards (an owner breaking its contract): sent once.
      await insertWalletRows(farPool, 'far_wallet', [...rows('lalu', 21, 40), ...rows('hala', 11, 20), ...rows('zozo', 1, 5)]);
      await insertWalletRows(env.owner, env.config.wallet_database, rows('lalu', 40, 40));
      proc = await startPipeline(config);
      const counts = async () =>
        Object.fromEntries(
          (await env!.notice.query<any[]>('SELECT CONCAT(app_code, ":", status) AS k, COUNT(*) AS n FROM notice_delivery_events GROUP BY k'))[0].map((r) => [
            r.k,
            Number(r.n),
          ]),
        );
      await waitFor(counts, (c) => c['lalu:delivered'] === 40 && c['hala:delivered'] === 20 && c['zozo:failed'] === 5, 30_000, 'every fact final');
      const byApp = (sdkAppId: number) =>
        env!.fakeIm
          .delivered()
          .filter((m) => m.sdkAppId === sdkAppId)
          .map((m) => JSON.parse(m.data).app_code);
      expect(byApp(1400000001)).toEqual(Array(40).fill('lalu'));
      expect(byApp(HALA.sdkAppId)).toEqual(Array(20).fill('hala'));
      expect(env.fakeIm.delivered()).toHaveLength(60);
      const [cursors] = await env.notice.query<any[]>('SELECT source_name, high_water_id FROM notice_ingest_cursors ORDER BY source_name');
      expect(cursors.map((c) => c.source_name)).toEqual(['wallet_outbox:far', 'wallet_outbox:near']);

      // The far server goes away: near keeps delivering, readiness names far only.
      await far.kill();
      await insertWalletRows(env.owner, env.config.wallet_database, rows('lalu', 41, 45));
      await waitFor(
        async () => env!.fakeIm.delivered().length,
        (n) => n === 65,
        15_000,
        'near delivers while far is down',
      );
      const readiness = await waitFor(
        () => proc!.readiness(),
        (r) => r.checks['source:wallet_outbox:far']?.startsWith('stalled') === true,
        15_000,
        'far reported stalled',
      );
      expect(readiness.checks['source:wallet_outbox:near']).toBe('ok');
      await far.start();
      const back = mysql.createPool({ uri: far.url, connectionLimit: 1 });
      await insertWalletRows(back, 'far_wallet', rows('hala', 21, 22));
      await back.end();
      await waitFor(
        async () => env!.fakeIm.delivered().length,
        (n) => n === 67,
        30_000,
        'far delivers again after it returns',
      );
    } finally {
      await farPool.end().catch(() => undefined);
    }
  });
});
