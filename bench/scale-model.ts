/**
 * The measurements behind docs/performance.md's scale model (`npm run bench:scale`): per event, at full batches and
 * at a trickle, the Redis commands, MySQL statements and bytes sent, CPU of each process; the bytes a ledger row, an
 * inbox item and a history entry take on disk; and how fast the reconciler's purge deletes final rows.
 * SCALE_EVENTS (default 20000) sizes the batch phase; the trickle phase writes 100 facts/s for SCALE_TRICKLE_S (20).
 */
import { createWorld, processUsage, type Counters } from './world.ts';
import { balanceChanged, insertWalletRows } from '../test/helpers/outbox.ts';
import { activityEvent, insertActivityRows } from '../test/helpers/activity.ts';
import { waitFor } from '../test/helpers/env.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { DeliveryHistory } from '../src/ledger/history.ts';

const EVENTS = Number(process.env.SCALE_EVENTS ?? 20_000);
const TRICKLE_S = Number(process.env.SCALE_TRICKLE_S ?? 20);
const log = (s: string) => process.stderr.write(`[scale] ${s}\n`);

const world = await createWorld({
  wallet_notice_worker: { enabled: true, poll_interval: '100ms', batch_size: 500 },
  activity_notice_worker: { enabled: true, poll_interval: '100ms', batch_size: 500 },
  deliver: { concurrency: 64 },
  inbox: { enabled: true },
  tencent_push: { enabled: true, batch_linger: '20ms' },
});
const { env } = world;
const rows: Array<[string, string]> = [];
const row = (what: string, value: string | number) => rows.push([what, String(value)]);
const finalRows = async () =>
  Number(
    (await env.notice.query<any[]>("SELECT COUNT(*) AS n FROM notice_delivery_events WHERE status NOT IN ('pending', 'retryable', 'delivering')"))[0][0].n,
  );

try {
  await world.spawn('ingest');
  await world.spawn('deliver');
  // A quarter of the facts are activity facts (C2C + inbox + push), the rest wallet facts (C2C): ~1.5 rows per fact.
  const wallet = Math.round(EVENTS * 0.75);
  const activity = EVENTS - wallet;
  const expectedRows = wallet + activity * 3;

  const measure = async (what: string, facts: number, ledgerRows: number, write: () => Promise<void>) => {
    const before: Counters = await world.counters();
    const cpuBefore = processUsage(world).map((p) => p.cpu);
    const done = (await finalRows()) + ledgerRows;
    await write();
    await waitFor(finalRows, (n) => n >= done, 600_000, `${what}: every row final`);
    const after = await world.counters();
    const cpu = processUsage(world).map((p, i) => ({ role: p.role, ms: ((p.cpu - cpuBefore[i]!) * 1000) / facts }));
    row(`${what}: Redis commands per fact`, ((after.redisCommands - before.redisCommands) / facts).toFixed(1));
    row(`${what}: MySQL statements per fact`, ((after.mysqlQuestions - before.mysqlQuestions) / facts).toFixed(2));
    row(`${what}: bytes sent to MySQL per fact`, Math.round((after.mysqlBytesReceived - before.mysqlBytesReceived) / facts));
    row(
      `${what}: MariaDB / Redis CPU ms per fact`,
      `${(((after.mysqlCpu - before.mysqlCpu) * 1000) / facts).toFixed(3)} / ${(((after.redisCpu - before.redisCpu) * 1000) / facts).toFixed(3)}`,
    );
    for (const c of cpu) row(`${what}: ${c.role} CPU ms per fact`, c.ms.toFixed(3));
    row(`${what}: facts/s (wall)`, Math.round(facts / ((after.atMs - before.atMs) / 1000)));
  };

  log(`batch phase: ${wallet} wallet + ${activity} activity facts written at once`);
  await measure('full batches', EVENTS, expectedRows, async () => {
    for (let from = 0; from < wallet; from += 1000)
      await insertWalletRows(
        env.owner,
        env.config.wallet_database,
        Array.from({ length: Math.min(1000, wallet - from) }, (_, i) => ({ ...balanceChanged(from + i + 1), user_id: String(100_000 + from + i) })),
      );
    for (let from = 0; from < activity; from += 1000)
      await insertActivityRows(
        env.owner,
        env.config.activity_database,
        Array.from({ length: Math.min(1000, activity - from) }, (_, i) => activityEvent(from + i + 1)),
      );
  });

  const trickleFacts = 100 * TRICKLE_S;
  log(`trickle phase: 100 wallet facts/s for ${TRICKLE_S} s`);
  await measure('100 facts/s', trickleFacts, trickleFacts, async () => {
    for (let s = 0; s < TRICKLE_S * 10; s++) {
      const at = Date.now();
      await insertWalletRows(
        env.owner,
        env.config.wallet_database,
        Array.from({ length: 10 }, (_, i) => ({ ...balanceChanged(1_000_000 + s * 10 + i), user_id: String(500_000 + s * 10 + i) })),
      );
      await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - at))));
    }
  });

  // Bytes on disk per row, after ANALYZE (InnoDB's page counts: data and secondary indexes, pages' free space included).
  const database = env.config.mysql.url.split('/').pop()!;
  for (const table of ['notice_delivery_events', 'notice_inbox_items', 'notice_delivery_history']) {
    await env.notice.query(`ANALYZE TABLE ${table}`);
    const [[count]] = await env.notice.query<any[]>(`SELECT COUNT(*) AS n FROM ${table}`);
    const [[size]] = await env.notice.query<any[]>(
      'SELECT data_length AS data, index_length AS idx FROM information_schema.tables WHERE table_schema = ? AND table_name = ?',
      [database, table],
    );
    const n = Number(count.n);
    row(`${table}: rows`, n);
    if (n === 0) continue;
    row(
      `${table}: bytes per row (data + indexes)`,
      `${Math.round((Number(size.data) + Number(size.idx)) / n)} (${Math.round(Number(size.data) / n)} + ${Math.round(Number(size.idx) / n)})`,
    );
  }

  // The purge: every final row made old enough, then deleted as the reconciler does, purge_batch_size at a time.
  await Promise.all(world.procs.map(({ proc }) => (proc.child.kill('SIGTERM'), proc.exited)));
  await env.notice.query("UPDATE notice_delivery_events SET updated_at_ms = 1 WHERE status = 'delivered'");
  await env.notice.query('UPDATE notice_delivery_history SET at_ms = 1');
  const ledger = new LedgerRepository(env.notice);
  const history = new DeliveryHistory(env.notice);
  const batch = env.config.retention.purge_batch_size;
  let purged = 0;
  const t0 = performance.now();
  for (let n = 1; n > 0; purged += n) n = await ledger.purgeFinal('delivered', Date.now(), batch);
  const ledgerMs = performance.now() - t0;
  row(`purge: ledger rows per second (batches of ${batch})`, Math.round(purged / (ledgerMs / 1000)));
  const t1 = performance.now();
  let historyPurged = 0;
  for (let n = 1; n > 0; historyPurged += n) n = await history.purge(Date.now(), batch);
  if (historyPurged > 0) row(`purge: history entries per second (batches of ${batch})`, Math.round(historyPurged / ((performance.now() - t1) / 1000)));
} finally {
  await world.close();
}

process.stdout.write(`| measure (${EVENTS} facts, then ${100 * TRICKLE_S} at 100/s) | value |\n| --- | --- |\n`);
for (const [what, value] of rows) process.stdout.write(`| ${what} | ${value} |\n`);
