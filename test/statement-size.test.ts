import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { PrivateMariaDb } from './helpers/mariadb-server.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { insertActivityRows, type ActivityRow } from './helpers/activity.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let server: PrivateMariaDb | undefined;
afterEach(async () => {
  await proc?.stop();
  await env?.close();
  await server?.destroy();
  proc = env = server = undefined;
});

/** A SystemNotice whose params make a payload of about `bytes`, full of quotes (each escaped twice on the way to SQL). */
function bigNotice(n: number, bytes: number, value = '"ab"'.repeat(120)): ActivityRow {
  // Values under the contract's 512 characters each; as JSON text each quote is two characters, in SQL four.
  const params = Object.fromEntries(Array.from({ length: Math.floor(bytes / (JSON.stringify(value).length + 10)) }, (_, k) => [`p${k}`, value]));
  return {
    event_id: `big_${n}`,
    event_type: 'SystemNotice',
    user_id: String(90_000 + n),
    payload: { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body', params },
  };
}
const small = (n: number): ActivityRow => ({
  event_id: `small_${n}`,
  event_type: 'SystemNotice',
  user_id: String(91_000 + n),
  payload: { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body' },
});

const ledger = async (env: TestEnv) =>
  (
    await env.notice.query<any[]>(
      'SELECT source_event_id, channel, status, last_error_code AS code, last_error AS error FROM notice_delivery_events ORDER BY source_event_id, channel',
    )
  )[0].map(({ source_event_id, ...rest }) => ({ id: String(source_event_id), ...rest }));

describe('multi-row statements stay under the server’s max_allowed_packet', () => {
  it('100 rows near the 64 KiB cap are ingested under a 1 MiB limit; a row that cannot fit even alone is recorded failed and the source moves on', async () => {
    server = new PrivateMariaDb(['--max-allowed-packet=1M']);
    await server.start();
    env = await createTestEnv(
      {
        inbox: { enabled: true, api_port: 0 },
        activity_notice_worker: { enabled: true, poll_interval: '50ms', batch_size: 100, lock_ttl: '3s', gap_grace: '5s' },
      },
      { mysqlServer: server.url },
    );
    const rows = Array.from({ length: 100 }, (_, n) => bigNotice(n, 60_000));
    expect(JSON.stringify(rows[0]!.payload).length).toBeGreaterThan(55_000);
    expect(JSON.stringify(rows[0]!.payload).length).toBeLessThan(64 * 1024);
    for (let i = 0; i < rows.length; i += 5) await insertActivityRows(env.owner, env.config.activity_database, rows.slice(i, i + 5));
    await insertActivityRows(env.owner, env.config.activity_database, [small(1)]);
    proc = await startPipeline(env.config);
    // Every fact has its rows (one per channel: C2C and inbox, each holding the payload), and the small one after them is delivered.
    const done = await waitFor(
      () => ledger(env!),
      (r) =>
        r.length > 0 &&
        new Set(r.filter((x) => x.id.startsWith('big_')).map((x) => x.id)).size === 100 &&
        r.some((x) => x.id === 'small_1' && x.status === 'delivered'),
      40_000,
      'every big fact recorded and the next one delivered',
    );
    const inbox = done.filter((x) => x.id.startsWith('big_') && x.channel === 'inbox');
    await waitFor(
      async () => (await env!.notice.query<any[]>('SELECT COUNT(*) AS n FROM notice_inbox_items'))[0][0].n,
      (n) => Number(n) === 101,
      60_000,
      'every inbox item written (each statement under the limit)',
    );
    expect(inbox).toHaveLength(100);

    // The limit goes down to 96 KiB: the outbox still hands out a 60 KB row, but its ledger row, ~120 KB as SQL
    // text (every character a quote), cannot fit even alone.
    await proc.stop();
    proc = undefined;
    const huge = bigNotice(1000, 60_000, '"'.repeat(500));
    await insertActivityRows(env.owner, env.config.activity_database, [huge, small(2)]);
    await env.owner.query('SET GLOBAL max_allowed_packet = 98304');
    proc = await startPipeline(env.config);
    const after = await waitFor(
      () => ledger(env!),
      (r) => r.some((x) => x.id === 'small_2' && x.status === 'delivered') && r.some((x) => x.id === 'big_1000'),
      60_000,
      'the row too large recorded and the next one delivered',
    );
    const refused = after.filter((x) => x.id === 'big_1000');
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r).toMatchObject({ status: 'failed', code: 'MALFORMED' });
      expect(r.error).toMatch(/max_allowed_packet of 98304 bytes/);
    }
  }, 180_000);
});
