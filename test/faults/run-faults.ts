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
import { alive, OUT_DIR, runScenario, sleep, type Harness, type Scenario, type ScenarioResult } from './harness.ts';
import { balanceChanged, insertWalletRows } from '../helpers/outbox.ts';

const scale = Number(process.env.FAULTS_SCALE ?? '1');
const n = (events: number) => Math.max(200, Math.round(events * scale));

/** Redis loses everything at once (FLUSHALL from a client of its own), noted in the scenario's injections. */
async function flushAll(h: Harness, note: string): Promise<void> {
  await h.redis.flushAll();
  h.note(note);
}

async function untilProgress(h: Harness, share: number): Promise<void> {
  while (h.writing() && h.progress() < share) await sleep(50);
}

const scenarios: Scenario[] = [
  {
    name: 'sigkill-deliver',
    title: 'SIGKILL a deliver process every 3 s, and the inbox-api holding the streams once',
    events: n(5000),
    ingest: 1,
    deliver: 3,
    faults: { delay_ms: 15 },
    writer: { ratePerSecond: 300 },
    async inject(h) {
      await Promise.all([
        killDeliversInTurn(h),
        (async () => {
          await untilProgress(h, 0.5);
          const api = h.procs.find((p) => p.role === 'inbox-api' && alive(p.proc));
          if (!api) return;
          await h.kill(api.proc);
          h.note(`SIGKILL inbox-api pid ${api.proc.child.pid} (every stream cut)`);
          await h.spawn('inbox-api');
        })(),
      ]);
    },
  },
  {
    name: 'redis-loss',
    title: 'FLUSHALL mid-run, then Redis restarted empty',
    events: n(3000),
    ingest: 1,
    deliver: 2,
    faults: { delay_ms: 10 },
    async inject(h) {
      await untilProgress(h, 0.3);
      await flushAll(h, 'FLUSHALL');
      await untilProgress(h, 0.6);
      h.note(h.redis.cluster ? 'every cluster node killed' : 'redis-server killed');
      await h.redis.killAndRestartEmpty(2000);
      h.note(h.redis.cluster ? 'every cluster node restarted empty' : 'redis-server restarted empty');
    },
  },
  {
    name: 'mysql-drop',
    title: "Kill the service's MySQL connections every 2 s",
    events: n(3000),
    ingest: 1,
    deliver: 2,
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
    name: 'fake-im-chaos',
    title: 'fake-im: 20% transient, 5% timeouts, slow, resets, 60007 burst, 70001, not-imported users',
    events: n(3000),
    ingest: 1,
    deliver: 2,
    notImported: ['10013', '10037'],
    faults: { transient_error_rate: 0.2, timeout_rate: 0.05, timeout_ms: 1500, reset_rate: 0.02, delay_ms: 20 },
    async inject(h) {
      await untilProgress(h, 0.4);
      h.env.fakeIm.setFaults({
        transient_error_rate: 0.2,
        timeout_rate: 0.05,
        timeout_ms: 1500,
        reset_rate: 0.02,
        delay_ms: 20,
        not_imported: ['10013', '10037'],
        errors: [
          { code: 60007, count: 200 },
          { code: 70001, count: 1 },
        ],
      });
      h.note('burst of 200 × 60007 and one 70001');
    },
  },
  {
    name: 'out-of-order-writers',
    title: 'Owner transactions committing out of order, 10% rolled back',
    events: n(3000),
    ingest: 1,
    deliver: 2,
    writer: { connections: 8, maxRowsPerTx: 5, maxCommitDelayMs: 150, rollbackRate: 0.1, ratePerSecond: 600 },
  },
  {
    name: 'ingest-failover',
    title: 'Two ingest processes on one source; the lease holder SIGKILLed mid-batch',
    events: n(3000),
    ingest: 2,
    deliver: 2,
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
  {
    name: 'partial-wipe',
    title: "SIGKILL a deliver every 3 s, 10% transient errors, and the queue's keys deleted one by one mid-run",
    events: n(3000),
    ingest: 1,
    deliver: 3,
    faults: { transient_error_rate: 0.1, delay_ms: 10 },
    writer: { ratePerSecond: 300 },
    async inject(h) {
      await Promise.all([
        killDeliversInTurn(h),
        (async () => {
          // What a failover to a lagging replica, an eviction or a careless cleanup leaves: some keys of every kind
          // gone, the rest in place, while everything runs. Two slow passes, so workers act between the deletions.
          // Every app's tag too: `{notice*` matches `{notice}:…` and `{notice:hala}:…`.
          for (const share of [0.5, 0.75]) {
            await untilProgress(h, share);
            const deleted = await h.redis.deleteOneByOne(`${h.env.config.redis.prefix.slice(0, -1)}*`, 1);
            h.note(`deleted ${deleted} Redis keys one by one (SCAN + DEL)`);
          }
        })(),
      ]);
    },
  },
  {
    name: 'redis-rollback',
    title: 'Redis restarted from a snapshot 5 s old (failover to a lagging replica) under a backlog',
    events: n(3000),
    ingest: 1,
    deliver: 2,
    // A slow provider keeps a backlog queued, so the rollback brings back jobs that have since been sent and loses
    // jobs added after the snapshot.
    faults: { delay_ms: 100 },
    writer: { ratePerSecond: 600 },
    async inject(h) {
      await untilProgress(h, 0.3);
      await h.redis.snapshot();
      h.note('snapshot taken (SAVE)');
      await sleep(5000);
      await h.redis.restoreSnapshot();
      h.note(`${h.redis.cluster ? 'every cluster node' : 'redis-server'} killed and restarted from the 5 s old snapshot`);
    },
  },
  {
    name: 'mysql-restart',
    title: 'A private MariaDB crashed (SIGKILL) and restarted twice mid-run',
    events: n(3000),
    ingest: 1,
    deliver: 2,
    privateMysql: true,
    faults: { delay_ms: 10 },
    writer: { ratePerSecond: 400 },
    async inject(h) {
      for (const share of [0.3, 0.7]) {
        await untilProgress(h, share);
        await h.mariadb!.kill();
        h.note('mariadbd SIGKILLed');
        await sleep(2000);
        await h.mariadb!.start();
        h.note('mariadbd restarted (crash recovery)');
      }
    },
  },
  {
    name: 'mysql-failover',
    title: 'MySQL primary SIGKILLed 8 s after its replica stopped applying; the replica promoted, the VIP moved to it',
    events: n(2500),
    ingest: 1,
    deliver: 2,
    privateMysql: 'replicated',
    // ~50 facts/s for distinct users (no superseding), two apps, as an operator's failover drill would write them.
    writer: {
      ratePerSecond: 50,
      connections: 2,
      maxRowsPerTx: 1,
      row: (k) => ({ ...balanceChanged(k), app_code: k % 2 === 1 ? 'hala' : 'lalu', user_id: String(300_000 + k) }),
    },
    async inject(h) {
      await untilProgress(h, 0.3);
      await h.replica!.stopApplying();
      h.note('replica SQL thread stopped (it falls behind)');
      await sleep(8000);
      await h.mariadb!.kill();
      h.note('primary SIGKILLed');
      await h.replica!.promote();
      await h.vip!.repoint(h.replica!.port);
      h.note('replica promoted (STOP SLAVE, RESET SLAVE ALL) and the VIP moved to it');
      // Time to recover: until a fact committed on the promoted database after the move reaches its user.
      const moved = Date.now();
      const [[{ top }]] = await h.env.owner.query<any[]>(`SELECT COALESCE(MAX(id), 0) AS top FROM \`${h.env.config.wallet_database}\`.wallet_outbox`);
      const [after] = await h.env.owner.query<any[]>(
        `SELECT event_id FROM \`${h.env.config.wallet_database}\`.wallet_outbox WHERE id > ? ORDER BY id LIMIT 1`,
        [top],
      );
      for (let i = 0; i < 600 && after.length === 0; i++) {
        await sleep(100);
        after.push(
          ...(
            await h.env.owner.query<any[]>(`SELECT event_id FROM \`${h.env.config.wallet_database}\`.wallet_outbox WHERE id > ? ORDER BY id LIMIT 1`, [top])
          )[0],
        );
      }
      const first = String(after[0]?.event_id);
      while (!h.env.fakeIm.delivered().some((m) => JSON.parse(m.data).event_id === first) && Date.now() - moved < 120_000) await sleep(100);
      h.note(`the first fact written after the move reached its user ${((Date.now() - moved) / 1000).toFixed(1)} s after the move`);
    },
  },
  {
    name: 'late-commit',
    title: 'Owner transactions that take their ids first and commit 3× gap_grace later',
    events: n(3000),
    ingest: 1,
    deliver: 2,
    config: { wallet_notice_worker: { gap_grace: '2s' } },
    writer: { ratePerSecond: 300 },
    async inject(h) {
      const slow = async (k: number) => {
        const conn = await h.env.owner.getConnection();
        try {
          await conn.beginTransaction();
          await insertWalletRows(conn, h.env.config.wallet_database, [balanceChanged(1_000_000 + k)]);
          await sleep(6000 + Math.random() * 1000);
          await conn.commit();
        } finally {
          conn.release();
        }
      };
      const held: Array<Promise<void>> = [];
      for (let k = 0; h.writing(); k++) {
        held.push(slow(k));
        await sleep(1000);
      }
      await Promise.all(held);
      h.note(`${held.length} transactions held ~3× gap_grace before commit`);
    },
  },
  {
    name: 'sparse-ids',
    title: 'Writers with auto_increment_increment = 7 (Group Replication multi-primary)',
    events: n(3000),
    ingest: 1,
    deliver: 2,
    config: { wallet_notice_worker: { gap_grace: '2s' } },
    writer: { autoIncrementIncrement: 7 },
  },
];

/**
 * A gift storm against Tencent's quota with deliver processes dying: priorities and superseded skipping must lose
 * nothing that is not superseded, send nothing twice, and every superseded balance must have a newer one delivered.
 */
scenarios.push({
  name: 'storm-kill',
  title: 'Gift storm at the 200/s quota (strict gateway), kicks, rewards, activity and VIP every 250 ms, a deliver SIGKILLed every 1.5 s',
  events: n(4000),
  ingest: 1,
  deliver: 2,
  config: {
    tencent_im: { rate_limit_per_second: 200 },
    room_notice_worker: { enabled: true, poll_interval: '100ms', batch_size: 100, lock_ttl: '5s', max_retry_count: 12, gap_grace: '30s' },
    deliver: { skip_superseded: { WalletBalanceChanged: true } },
  },
  faults: { delay_ms: 15, rate_limit_per_second: 200, rate_limit_counts_rejected: true },
  // 400 users with about ten rising versions each: the latest of each is several seconds of quota.
  writer: { ratePerSecond: 1500, maxRowsPerTx: 10, row: (i) => ({ ...balanceChanged(i), event_id: `storm_${i}`, user_id: String(40000 + (i % 400)) }) },
  sideEveryMs: 250,
  async inject(h) {
    // Kills go on past the burst, while the backlog drains at the quota.
    const until = Date.now() + 12_000;
    while (h.writing() || Date.now() < until) {
      await sleep(1500);
      const victims = h.procs.filter((p) => p.role === 'deliver' && alive(p.proc));
      const victim = victims[Math.floor(Math.random() * victims.length)];
      if (!victim) continue;
      await h.kill(victim.proc);
      h.note(`SIGKILL deliver pid ${victim.proc.child.pid}`);
      await h.spawn('deliver');
    }
  },
});

/**
 * Phone pushes are on in every scenario (activity and VIP notices go to C2C, the inbox and tencent_push); these put
 * more push-kind facts through and make one provider misbehave while the other is healthy, both ways round: a channel's faults must not hold back, lose or duplicate the other's deliveries.
 * A push cut after TIMPush processed it is delivered_unconfirmed (retry_ambiguous: false), never resent.
 */
// A slower main stream and a faster side stream: about 15 s per 1,000 events with ~17 push-kind facts a second.
const PUSH_PACE = { writer: { ratePerSecond: 70 }, sideEveryMs: 40 };
scenarios.push({
  name: 'push-chaos',
  title: 'TIMPush: 20% 91000, 5% timeouts, resets before and after processing, 502s, a 60007 burst at 30 calls/s; IM healthy',
  events: n(2000),
  ingest: 1,
  deliver: 2,
  faults: { delay_ms: 10 },
  pushFaults: {
    transient_error_rate: 0.2,
    timeout_rate: 0.05,
    timeout_ms: 1500,
    reset_rate: 0.03,
    reset_after_processing_rate: 0.03,
    rate_limit_per_second: 30,
    rate_limit_counts_rejected: true,
  },
  ...PUSH_PACE,
  async inject(h) {
    await untilProgress(h, 0.4);
    h.env.fakeIm.setPushFaults({
      transient_error_rate: 0.2,
      timeout_rate: 0.05,
      timeout_ms: 1500,
      reset_rate: 0.03,
      reset_after_processing_rate: 0.03,
      rate_limit_per_second: 30,
      rate_limit_counts_rejected: true,
      http_errors: 10,
      errors: [{ code: 60007, count: 30 }],
    });
    h.note('10 × HTTP 502 and 30 × 60007 on timpush/batch');
  },
});
scenarios.push({
  name: 'im-chaos-push-healthy',
  title: 'Tencent IM sendmsg: 30% transient, 5% timeouts, resets, a 60007 burst; TIMPush healthy',
  events: n(2000),
  ingest: 1,
  deliver: 2,
  faults: { transient_error_rate: 0.3, timeout_rate: 0.05, timeout_ms: 1500, reset_rate: 0.02, delay_ms: 20 },
  ...PUSH_PACE,
  async inject(h) {
    await untilProgress(h, 0.4);
    h.env.fakeIm.setFaults({
      transient_error_rate: 0.3,
      timeout_rate: 0.05,
      timeout_ms: 1500,
      reset_rate: 0.02,
      delay_ms: 20,
      errors: [{ code: 60007, count: 200 }],
    });
    h.note('burst of 200 × 60007 on sendmsg');
  },
});
scenarios.push({
  name: 'push-sigkill',
  title: 'Pushes on, a deliver SIGKILLed every 3 s (batches cut mid-linger and mid-call)',
  events: n(2000),
  ingest: 1,
  deliver: 3,
  faults: { delay_ms: 15 },
  pushFaults: { delay_ms: 50 },
  ...PUSH_PACE,
  inject: killDeliversInTurn,
});

scenarios.push({
  name: 'quiet-release',
  title: 'Quiet hours end for ~1,500 users as Redis is flushed and a deliver SIGKILLed',
  events: n(2000),
  ingest: 1,
  deliver: 2,
  quietForMs: 20_000,
  faults: { delay_ms: 10 },
  pushFaults: { delay_ms: 20 },
  writer: { ratePerSecond: 200 },
  sideEveryMs: 40,
  async inject(h) {
    // The pushes deferred so far are released at quietUntilMs: the flush and the kill land on that moment.
    while (Date.now() < h.quietUntilMs! - 50) await sleep(20);
    await flushAll(h, 'FLUSHALL at the end of the quiet hours');
    await replaceDeliver(
      h,
      h.procs.find((p) => p.role === 'deliver' && alive(p.proc)),
    );
    await sleep(3000);
  },
});

scenarios.push({
  name: 'digest-kill',
  title: 'Digests of bursts (2 s windows) while a deliver is SIGKILLed every 3 s and Redis is flushed once',
  events: n(2000),
  ingest: 1,
  deliver: 3,
  faults: { delay_ms: 10 },
  pushFaults: { delay_ms: 20 },
  writer: { ratePerSecond: 100 },
  sideEveryMs: 30,
  // No cap here: every summary must go, so the counts they carry can be checked against the ledger.
  config: { tencent_push: { frequency_cap: [], digest: { activity_notice: { window: '2s' } } } },
  async inject(h) {
    let flushed = false;
    while (h.writing()) {
      await sleep(3000);
      if (!flushed && h.progress() > 0.4) {
        await flushAll(h, 'FLUSHALL');
        flushed = true;
      }
      await replaceDeliver(
        h,
        h.procs.find((p) => p.role === 'deliver' && alive(p.proc)),
      );
    }
  },
});

/** SIGKILL this deliver process (if any) and start a fresh one in its place, noted in the scenario's injections. */
async function replaceDeliver(h: Harness, victim: Harness['procs'][number] | undefined): Promise<void> {
  if (!victim) return;
  await h.kill(victim.proc);
  h.note(`SIGKILL deliver pid ${victim.proc.child.pid}`);
  await h.spawn('deliver');
}

async function killDeliversInTurn(h: Harness): Promise<void> {
  while (h.writing()) {
    await sleep(3000);
    const victims = h.procs.filter((p) => p.role === 'deliver' && alive(p.proc));
    await replaceDeliver(h, victims[Math.floor(Math.random() * victims.length)]);
  }
}

const only = process.env.FAULTS_ONLY?.split(',').filter(Boolean);
const results: ScenarioResult[] = [];
for (const scenario of scenarios.filter((s) => !only || only.includes(s.name))) {
  const t0 = Date.now();
  process.stderr.write(`[faults] ${scenario.name}: ${scenario.events} events …\n`);
  const result = await runScenario(scenario);
  results.push(result);
  process.stderr.write(`[faults] ${scenario.name}: done in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
}

const header =
  '| scenario | faults injected | written (for inbox) | rolled back / cut | owner lost in failover (had reached users) | delivered C2C / inbox / push (unconfirmed) | superseded | suppressed (cap short) | failed (why) | requests | duplicate sends (filtered) | user-visible duplicates | misdirected | lost | stuck | drain s | streams: events / reconnects / stale |';
const lines = [header, '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|'];
for (const r of results) {
  const why =
    Object.entries(r.failed_by_code)
      .map(([c, k]) => `${k}×${c}`)
      .join(', ') || '0';
  const c2c = r.by_channel.tencent_im_c2c!;
  const inbox = r.by_channel.inbox!;
  const push = r.by_channel.tencent_push!;
  const pushCell =
    push.expected > 0 ? ` / ${push.delivered} (${push.unconfirmed}${push.unconfirmed_unreached ? `, ${push.unconfirmed_unreached} unreached` : ''})` : '';
  const suppressed = Object.values(r.by_channel).reduce((n, c) => n + c.suppressed, 0);
  const requests = `${r.fake_im_requests}${push.expected > 0 ? ` + ${r.push_requests} push` : ''}`;
  lines.push(
    `| ${r.scenario} | ${r.injections.length} | ${r.written} (${r.written_for_inbox}) | ${r.rolled_back} | ${r.owner_lost.facts} (${r.owner_lost.reached}) | ${c2c.delivered} / ${inbox.delivered}${pushCell} | ${r.superseded} | ${suppressed}${r.cap_short ? ` (${r.cap_short})` : ''} | ${r.failed}${r.failed ? ` (${why})` : ''} | ${requests} | ${r.duplicate_sends} | ${r.user_visible_duplicates} | ${r.misdirected} | ${r.lost} | ${r.stuck} | ${r.drain_seconds} | ${r.streams.item_added + r.streams.unread_changed} / ${r.streams.reconnects} / ${r.streams.stale}${r.streams.stale_owner_lost ? ` (+${r.streams.stale_owner_lost} owner lost)` : ''} |`,
  );
}
const table = lines.join('\n');
console.log(table);
writeFileSync(join(OUT_DIR, 'report.json'), JSON.stringify({ generated_at: new Date().toISOString(), scale, results }, null, 2));
writeFileSync(join(OUT_DIR, 'report.md'), `${table}\n`);

const problems = results.flatMap((r) => [
  ...Object.entries(r.by_channel).flatMap(([channel, c]) => [
    ...(c.lost > 0 ? [`${r.scenario}: ${c.lost} ${channel} deliveries lost`] : []),
    ...(c.stuck > 0 ? [`${r.scenario}: ${c.stuck} ${channel} deliveries stuck (ledger row never final)`] : []),
  ]),
  ...(r.misdirected > 0 ? [`${r.scenario}: ${r.misdirected} messages or inbox items reached the wrong user`] : []),
  ...(r.digest_mismatch > 0 ? [`${r.scenario}: ${r.digest_mismatch} users' digest counts do not add up: ${r.unwanted_why.slice(0, 3).join('; ')}`] : []),
  ...(r.unwanted > 0 ? [`${r.scenario}: ${r.unwanted} sends the user did not want (a suppressed row sent, or pushes over the cap)`] : []),
  ...(r.phantom > 0 ? [`${r.scenario}: ${r.phantom} messages for events never committed (${r.phantom_sample.join(', ')})`] : []),
  ...(r.streams.stale > 0
    ? [`${r.scenario}: ${r.streams.stale} WatchInbox streams ended showing other counts than GetUnreadCount: ${r.streams.stale_why.slice(0, 3).join('; ')}`]
    : []),
  ...(r.streams.foreign > 0 ? [`${r.scenario}: ${r.streams.foreign} stream events carried another user's item`] : []),
  ...(r.user_visible_duplicates > 0 ? [`${r.scenario}: ${r.user_visible_duplicates} events reached a user twice (${r.twice_sample.join(', ')})`] : []),
  ...r.secret_leaks.map((l) => `${r.scenario}: secret in logs: ${l}`),
]);
if (problems.length > 0) {
  console.error(`fault suite FAILED:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(`${results.length} passed, 0 failed`);
process.exit(0);
