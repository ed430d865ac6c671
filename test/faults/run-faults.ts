/**
 * The fault-injection suite (`npm run test:faults`): real notice-service processes against MariaDB, a private
 * Redis and fake-im, a steady stream of outbox rows, one kind of fault per scenario, and at the end the ledger and
 * fake-im checked against what was written. Prints a table, writes .tmp/faults/report.json, exits non-zero if an
 * event was lost, a secret leaked, or duplicates exceeded what in-flight sends can explain.
 *
 * FAULTS_SCALE (default 1) scales the event counts; FAULTS_ONLY=name,name runs a subset.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OUT_DIR, runScenario, sleep, type Harness, type Scenario, type ScenarioResult } from './harness.ts';

const scale = Number(process.env.FAULTS_SCALE ?? '1');
const n = (events: number) => Math.max(200, Math.round(events * scale));

async function untilProgress(h: Harness, share: number): Promise<void> {
  while (h.writing() && h.progress() < share) await sleep(50);
}

const scenarios: Scenario[] = [
  {
    name: 'sigkill-deliver', title: 'SIGKILL a deliver process every 3 s', events: n(5000), ingest: 1, deliver: 3,
    faults: { delay_ms: 15 },
    writer: { ratePerSecond: 300 },
    async inject(h) {
      while (h.writing()) {
        await sleep(3000);
        const victims = h.procs.filter((p) => p.role === 'deliver' && p.proc.child.exitCode === null);
        const victim = victims[Math.floor(Math.random() * victims.length)];
        if (!victim) continue;
        await h.kill(victim.proc);
        h.note(`SIGKILL deliver pid ${victim.proc.child.pid}`);
        await h.spawn('deliver');
      }
    },
  },
  {
    name: 'redis-loss', title: 'FLUSHALL mid-run, then Redis restarted empty', events: n(3000), ingest: 1, deliver: 2,
    faults: { delay_ms: 10 },
    async inject(h) {
      await untilProgress(h, 0.3);
      const { Redis } = await import('ioredis');
      const client = new Redis(h.env.config.redis.url);
      await client.flushall();
      client.disconnect();
      h.note('FLUSHALL');
      await untilProgress(h, 0.6);
      await h.redis.stop();
      h.note('redis-server killed');
      await sleep(2000);
      await h.redis.start(h.redis.port);
      h.note('redis-server restarted empty');
    },
  },
  {
    name: 'mysql-drop', title: "Kill the service's MySQL connections every 2 s", events: n(3000), ingest: 1, deliver: 2,
    faults: { delay_ms: 10 },
    async inject(h) {
      const db = h.env.config.mysql.url.split('/').pop()!;
      while (h.writing()) {
        await sleep(2000);
        const [rows] = await h.env.owner.query<any[]>('SELECT id FROM information_schema.PROCESSLIST WHERE db = ?', [db]);
        const mine = new Set<number>();
        for (const r of rows) {
          await h.env.owner.query('KILL CONNECTION ?', [Number(r.id)]).catch(() => undefined);
          mine.add(Number(r.id));
        }
        h.note(`killed ${mine.size} MySQL connections`);
      }
    },
  },
  {
    name: 'fake-im-chaos', title: 'fake-im: 20% transient, 5% timeouts, slow, resets, 60007 burst, 70001, not-imported users', events: n(3000), ingest: 1, deliver: 2,
    notImported: ['10013', '10037'],
    faults: { transient_error_rate: 0.2, timeout_rate: 0.05, timeout_ms: 1500, reset_rate: 0.02, delay_ms: 20 },
    async inject(h) {
      await untilProgress(h, 0.4);
      h.env.fakeIm.setFaults({ transient_error_rate: 0.2, timeout_rate: 0.05, timeout_ms: 1500, reset_rate: 0.02, delay_ms: 20, not_imported: ['10013', '10037'], errors: [{ code: 60007, count: 200 }, { code: 70001, count: 1 }] });
      h.note('burst of 200 × 60007 and one 70001');
    },
  },
  {
    name: 'out-of-order-writers', title: 'Owner transactions committing out of order, 10% rolled back', events: n(3000), ingest: 1, deliver: 2,
    writer: { connections: 8, maxRowsPerTx: 5, maxCommitDelayMs: 150, rollbackRate: 0.1, ratePerSecond: 600 },
  },
  {
    name: 'ingest-failover', title: 'Two ingest processes on one source; the lease holder SIGKILLed mid-batch', events: n(3000), ingest: 2, deliver: 2,
    async inject(h) {
      await untilProgress(h, 0.3);
      const [rows] = await h.env.notice.query<any[]>("SELECT lease_owner FROM notice_ingest_cursors WHERE source_name = 'wallet_outbox'");
      const pid = Number(String(rows[0]?.lease_owner ?? '').split(':')[1]);
      const holder = h.procs.find((p) => p.role === 'ingest' && p.proc.child.pid === pid);
      if (!holder) throw new Error(`no ingest process holds the lease (${rows[0]?.lease_owner})`);
      await h.kill(holder.proc);
      h.note(`SIGKILL ingest lease holder pid ${pid}`);
    },
  },
];

const only = process.env.FAULTS_ONLY?.split(',').filter(Boolean);
const results: ScenarioResult[] = [];
for (const scenario of scenarios.filter((s) => !only || only.includes(s.name))) {
  const t0 = Date.now();
  process.stderr.write(`[faults] ${scenario.name}: ${scenario.events} events …\n`);
  const result = await runScenario(scenario);
  results.push(result);
  process.stderr.write(`[faults] ${scenario.name}: done in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
}

const header = '| scenario | faults injected | written | rolled back | delivered | failed (why) | requests | duplicate sends (filtered) | user-visible duplicates | lost | drain s |';
const lines = [header, '|---|---|---|---|---|---|---|---|---|---|---|'];
for (const r of results) {
  const why = Object.entries(r.failed_by_code).map(([c, k]) => `${k}×${c}`).join(', ') || '0';
  lines.push(`| ${r.scenario} | ${r.injections.length} | ${r.written} | ${r.rolled_back} | ${r.delivered} | ${r.failed}${r.failed ? ` (${why})` : ''} | ${r.fake_im_requests} | ${r.duplicate_sends} | ${r.user_visible_duplicates} | ${r.lost} | ${r.drain_seconds} |`);
}
const table = lines.join('\n');
console.log(table);
writeFileSync(join(OUT_DIR, 'report.json'), JSON.stringify({ generated_at: new Date().toISOString(), scale, results }, null, 2));
writeFileSync(join(OUT_DIR, 'report.md'), `${table}\n`);

const problems = results.flatMap((r) => [
  ...(r.lost > 0 ? [`${r.scenario}: ${r.lost} events lost`] : []),
  ...(r.phantom > 0 ? [`${r.scenario}: ${r.phantom} messages for events never committed`] : []),
  ...(r.user_visible_duplicates > 0 ? [`${r.scenario}: ${r.user_visible_duplicates} events reached a user twice`] : []),
  ...r.secret_leaks.map((l) => `${r.scenario}: secret in logs: ${l}`),
]);
if (problems.length > 0) {
  console.error(`fault suite FAILED:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(`${results.length} passed, 0 failed`);
process.exit(0);
