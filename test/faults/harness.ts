import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mysql, { type PoolConnection } from 'mysql2/promise';
import { createTestEnv, type TestEnv } from '../helpers/env.ts';
import { balanceChanged, insertWalletRows, vipActivated, type WalletRow } from '../helpers/outbox.ts';
import { insertRoomRows, kick, rocket } from '../helpers/room.ts';
import { activityEvent, insertActivityRows } from '../helpers/activity.ts';
import { startRedisUnderTest, type RedisUnderTest } from './redis-under-test.ts';
import { PrivateMariaDb } from '../helpers/mariadb-server.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';
import { spawnNotice, waitForOutput, type Spawned } from '../helpers/spawn.ts';
import type { Faults } from '../../src/fake-im/server.ts';
import { PreferenceStore, type PreferenceKey } from '../../src/preferences/store.ts';
import { QuietHoursStore } from '../../src/quiet-hours/store.ts';
import { DateTime } from 'luxon';
import { STATUS_TABLE, type DeliveryStatus } from '../../src/ledger/status.ts';
import { freePort } from '../helpers/ports.ts';
import { StreamWatchers, type StreamCounts } from './streams.ts';

export const OUT_DIR = join(process.cwd(), '.tmp', 'faults');

export interface WriterOptions {
  connections: number;
  ratePerSecond: number;
  /** Rows per owner transaction (1..n). */
  maxRowsPerTx: number;
  /** Random wait inside the transaction before commit: commits land out of id order. */
  maxCommitDelayMs: number;
  rollbackRate: number;
  /** SET SESSION auto_increment_increment on each writer connection (MySQL Group Replication uses 7). */
  autoIncrementIncrement: number;
  /** The n-th outbox row (default balanceChanged: 50 users with rising versions). */
  row: (n: number) => WalletRow;
}

export interface Scenario {
  name: string;
  title: string;
  events: number;
  ingest: number;
  deliver: number;
  writer?: Partial<WriterOptions>;
  config?: Record<string, unknown>;
  faults?: Faults;
  /** Faults for fake-im's timpush/batch (the tencent_push channel). */
  pushFaults?: Faults;
  /** Runs after the writers and the injection, before the drain (e.g. a push outage ends). */
  beforeDrain?: (h: Harness) => Promise<void>;
  /** Runs while the writers write; `progress()` is the share of events committed so far. */
  inject?: (h: Harness) => Promise<void>;
  /** Users fake-im never imported: their events must end failed, not lost. */
  notImported?: string[];
  /**
   * Run on a private MariaDB instance (for faults that restart the server) instead of the shared one; `replicated`:
   * a primary (ROW binlog) with a GTID replica, everything reaching the primary through one TCP proxy (the VIP).
   */
  privateMysql?: boolean | 'replicated';
  /**
   * Besides the wallet stream, commit one fact of the other kinds this often (default 100 ms) until the writers and
   * the injection are done, in turn: a room kick, a rocket reward, the three activity types, a VIP activation.
   * These are the kinds the inbox takes, so every scenario exercises both channels.
   */
  sideEveryMs?: number;
  /**
   * Quiet hours for every activity user and both heavy users, ending this long after the processes start: their
   * pushes wait in the ledger until then (a push that reaches them earlier is unwanted).
   */
  quietForMs?: number;
}

export interface Harness {
  env: TestEnv;
  /** One private redis-server, or a private cluster (FAULTS_REDIS=cluster). */
  redis: RedisUnderTest;
  mariadb: PrivateMariaDb | null;
  /** `privateMysql: 'replicated'`: the replica and the proxy every client reaches MySQL through. */
  replica: PrivateMariaDb | null;
  vip: TcpProxy | null;
  procs: Array<{ role: string; proc: Spawned }>;
  progress(): number;
  writing(): boolean;
  /** When the quiet hours of a quietForMs scenario end (epoch ms), or null. */
  quietUntilMs: number | null;
  spawn(role: 'ingest' | 'deliver' | 'inbox-api'): Promise<Spawned>;
  kill(proc: Spawned, signal?: NodeJS.Signals): Promise<void>;
  note(text: string): void;
}

export interface ChannelCounts {
  /** Ledger rows the routing owes this channel for the committed events. */
  expected: number;
  delivered: number;
  failed: number;
  /** Finished unsent because a newer version of the same balance was delivered (checked: one was). */
  superseded: number;
  /** Finished unsent by the user's choice or the push cap (checked: the choice was made, the cap was full). */
  suppressed: number;
  /** Not pushed on its own: counted in a digest summary (checked: the user's summaries carry every such row). */
  digested: number;
  /** delivered_unconfirmed: the request may have arrived and was not resent (push, retry_ambiguous: false). */
  unconfirmed: number;
  /** Of those, the ones that did not reach the user after all (a cut before the provider processed it). */
  unconfirmed_unreached: number;
  stuck: number;
  lost: number;
}

export interface ScenarioResult {
  scenario: string;
  title: string;
  /** Committed facts (wallet stream plus the side stream of kicks, rewards, activity and VIP). */
  written: number;
  /** Of `written`, the facts of kinds the inbox takes. */
  written_for_inbox: number;
  rolled_back: number;
  /**
   * Facts whose commit the owner saw succeed and that are gone from the outbox at the end (a failover promoted a
   * replica that never got them): the owner's loss, not the service's; `reached` of them got to a user before.
   */
  owner_lost: { facts: number; reached: number; sample: string[] };
  delivered: number;
  failed: number;
  superseded: number;
  /** Committed (fact, channel) pairs whose ledger row is still not final when the drain ends. */
  stuck: number;
  by_channel: Record<string, ChannelCounts>;
  /** A message or inbox item that reached someone other than the fact's user. */
  misdirected: number;
  /** Sends a user did not want: a suppressed row that reached them anyway, or pushes beyond the cap. */
  unwanted: number;
  unwanted_why: string[];
  /** Users whose digest summaries do not carry exactly their digested and sent rows. */
  digest_mismatch: number;
  /** The WatchInbox streams held open through the scenario (one inbox-api process) and whether they ended true. */
  streams: StreamCounts;
  /** quietForMs scenarios: the quiet users' pushes, and how long after their quiet hours ended they went out. */
  quiet_pushes?: { count: number; first_after_ms: number | null; median_after_ms: number | null };
  /** Users whose pushes stopped short of the cap although more were written (an over-count: allowed, reported). */
  cap_short: number;
  failed_by_code: Record<string, number>;
  /** delivered_unconfirmed rows by whether the user got it and the error that made it ambiguous. */
  unconfirmed_by_code: Record<string, number>;
  fake_im_requests: number;
  /** timpush/batch calls that reached fake-im (every answer, faults included). */
  push_requests: number;
  push_stats?: unknown;
  duplicate_sends: number;
  user_visible_duplicates: number;
  /** Committed (fact, channel) pairs with no ledger row, or marked delivered without reaching the channel. */
  lost: number;
  phantom: number;
  phantom_sample: string[];
  twice_sample: string[];
  drain_seconds: number;
  injections: string[];
  secret_leaks: string[];
}

/** Two apps in every scenario: the wallet stream alternates lalu (the test env's app) and hala, each its own Tencent app. */
const HALA = { sdkAppId: 1400000002, secretKey: 'hala-fault-secret-0000000000000001', adminIdentifier: 'administrator' };
const APP_OF_SDK: Record<number, string> = { 1400000001: 'lalu', [HALA.sdkAppId]: 'hala' };
const twoAppRow = (n: number): WalletRow => ({ ...balanceChanged(n), app_code: n % 2 === 1 ? 'hala' : 'lalu' });

const PUSH_CAP = 2;
/** Users with a WatchInbox stream open in every scenario (see sideFact: heavy, activity and VIP users). */
const WATCHED_USERS = [
  '69000',
  '69001',
  ...Array.from({ length: 600 }, (_, k) => k).flatMap((k) => (k % 6 === 2 || k % 6 === 3 ? [String(60000 + k)] : k % 6 === 5 ? [String(20000 + k)] : [])),
];
/** Users with quiet hours in a quietForMs scenario: the activity users of the side stream and the two heavy ones. */
const QUIET_USERS = [...Array.from({ length: 1500 }, (_, k) => String(60000 + k)), '69000', '69001'];
/** Users' choices in every scenario, stored before the processes start. */
const CHOICES: Array<PreferenceKey & { enabled: boolean }> = [
  // A wallet user of each app turned balance messages off: their rows end suppressed and nothing is sent.
  { appCode: 'lalu', userId: '10002', noticeKind: 'wallet_notice', channel: 'tencent_im_c2c', enabled: false },
  { appCode: 'hala', userId: '10001', noticeKind: 'wallet_notice', channel: 'tencent_im_c2c', enabled: false },
  // Every second kick's target stored "off" behind the API's back: kicks are mandatory, so they still go.
  ...Array.from({ length: 200 }, (_, i) => ({
    appCode: 'lalu',
    userId: String(30000 + 12 * (i + 1)),
    noticeKind: 'room_notice',
    channel: 'tencent_im_c2c',
    enabled: false,
  })),
  // Some activity users want these notices in the inbox but not on the lock screen.
  ...Array.from({ length: 400 }, (_, i) => ({
    appCode: 'lalu',
    userId: String(60000 + 12 * i + 2),
    noticeKind: 'activity_notice',
    channel: 'tencent_push',
    enabled: false,
  })),
];
const isOff = (app: string, user: string, kind: string, channel: string) =>
  CHOICES.some((c) => !c.enabled && c.appCode === app && c.userId === user && c.noticeKind === kind && c.channel === channel);
const FINAL = new Set(Object.entries(STATUS_TABLE).flatMap(([status, t]) => (t.final ? [status as DeliveryStatus] : [])));

const SIDE_SOURCE = { enabled: true, poll_interval: '100ms', batch_size: 100, lock_ttl: '5s', max_retry_count: 12, gap_grace: '30s' };
const BASE_CONFIG = {
  wallet_notice_worker: { poll_interval: '100ms', batch_size: 200, lock_ttl: '5s', max_retry_count: 12, gap_grace: '30s' },
  room_notice_worker: SIDE_SOURCE,
  activity_notice_worker: SIDE_SOURCE,
  inbox: { enabled: true },
  // Phone pushes for activity and VIP notices in every scenario: each such fact is a C2C message, an inbox item and a push.
  // The push cap is on in every scenario; two heavy users receive most pushes (see sideFact).
  tencent_push: { enabled: true, request_timeout: '1s', batch_linger: '20ms', frequency_cap: [{ max: PUSH_CAP, per: '1h' }] },
  // The default expiry, stated: the side stream commits at the current time, so nothing may expire (and none does).
  deliver: { expire_after: { room_notice: '10m' }, concurrency: 16, retry_base_delay: '200ms', retry_max_delay: '2s', job_lock_duration: '5s' },
  tencent_im: { request_timeout: '1s', apps: { hala: { sdk_app_id: HALA.sdkAppId, secret_key: HALA.secretKey } } },
  reconciler: { interval: '1s', pending_grace: '3s', batch_size: 500 },
  log: { level: 'info' },
  preferences: { enabled: true },
  shutdown_timeout: '5s',
};

export async function runScenario(s: Scenario): Promise<ScenarioResult> {
  const redis = await startRedisUnderTest();
  const binlog = ['--log-bin=mysql-bin', '--binlog-format=ROW', '--log-slave-updates'];
  const replicated = s.privateMysql === 'replicated';
  const mariadb = s.privateMysql ? new PrivateMariaDb(replicated ? [...binlog, '--server-id=1'] : []) : null;
  let mysqlServer = mariadb ? await mariadb.start() : undefined;
  const replica = replicated ? new PrivateMariaDb([...binlog, '--server-id=2']) : null;
  let vip: TcpProxy | null = null;
  if (replica) {
    await replica.start();
    await replica.replicate(mariadb!);
    vip = new TcpProxy('127.0.0.1', mariadb!.port);
    mysqlServer = `mysql://root@127.0.0.1:${await vip.start()}`;
  }
  const apiPort = await freePort();
  const env = await createTestEnv(
    merge(merge(BASE_CONFIG, { redis: { url: redis.url, cluster: redis.cluster }, inbox: { api_port: apiPort } }), s.config ?? {}),
    {
      mysqlServer,
      fakeImApps: [HALA],
    },
  );
  const dir = join(OUT_DIR, s.name);
  mkdirSync(dir, { recursive: true });
  env.fakeIm.setFaults({ ...(s.faults ?? {}), not_imported: s.notImported ?? [] });
  env.fakeIm.setPushFaults(s.pushFaults ?? {});
  const injections: string[] = [];
  const procs: Harness['procs'] = [];
  let committed = 0;
  /** Facts whose commit returned: what the owner believes it wrote. */
  const acknowledged = new Set<string>();
  /** event id → the user and kind it was written for: what each channel must deliver, and to whom. */
  const intended = new Map<string, Intended>();
  await new PreferenceStore(env.notice).set(CHOICES, Date.now());
  let rolledBack = 0;
  let writing = true;

  const h: Harness = {
    env,
    redis,
    mariadb,
    replica,
    vip,
    procs,
    progress: () => committed / s.events,
    quietUntilMs: null,
    writing: () => writing,
    async spawn(role) {
      const proc = spawnNotice([role, '--config', env.configFile]);
      procs.push({ role, proc });
      await waitForOutput(proc, /notice-service started/, 20_000);
      return proc;
    },
    async kill(proc, signal = 'SIGKILL') {
      if (!alive(proc)) return;
      proc.child.kill(signal);
      await proc.exited;
    },
    note: (text) => {
      injections.push(`${((Date.now() - started) / 1000).toFixed(1)}s ${text}`);
      if (process.env.FAULTS_VERBOSE) process.stderr.write(`[faults] ${s.name}: ${injections.at(-1)}\n`);
    },
  };

  if (s.quietForMs) {
    const until = DateTime.now().setZone('Asia/Shanghai').plus({ milliseconds: s.quietForMs }).set({ millisecond: 0 });
    h.quietUntilMs = until.toMillis();
    const window = { start: until.minus({ hours: 1 }).toFormat('HH:mm:ss'), end: until.toFormat('HH:mm:ss') };
    const store = new QuietHoursStore(env.notice);
    for (const userId of QUIET_USERS) await store.set('lalu', userId, { timeZone: 'Asia/Shanghai', windows: [window] }, Date.now());
  }
  for (let i = 0; i < s.ingest; i++) await h.spawn('ingest');
  for (let i = 0; i < s.deliver; i++) await h.spawn('deliver');
  await h.spawn('inbox-api');
  // Streams open through the whole scenario, as a gateway holds them: the heavy users (one of them also reading on
  // another device every second) and every activity and VIP user of the side stream's first 600 facts.
  const streams = await StreamWatchers.open(apiPort, WATCHED_USERS, '69000', (id) => intended.get(id)?.user);
  const started = Date.now();

  const w: WriterOptions = {
    connections: 4,
    ratePerSecond: 600,
    maxRowsPerTx: 3,
    maxCommitDelayMs: 0,
    rollbackRate: 0,
    autoIncrementIncrement: 1,
    row: twoAppRow,
    ...s.writer,
  };
  let next = 0;
  /** Rows whose transaction was cut by a fault: committed or not, as the outbox says at the end. */
  const cut: string[] = [];
  const writer = async () => {
    let conn: PoolConnection | null = null;
    while (next < s.events) {
      const size = Math.min(1 + Math.floor(Math.random() * w.maxRowsPerTx), s.events - next);
      const rows = Array.from({ length: size }, () => w.row(++next));
      for (const r of rows) intended.set(r.event_id!, { app: r.app_code ?? 'lalu', user: r.user_id!, kind: WALLET_KINDS[r.event_type] ?? 'wallet_notice' });
      try {
        if (!conn) {
          conn = await env.owner.getConnection();
          if (w.autoIncrementIncrement > 1) await conn.query('SET SESSION auto_increment_increment = ?', [w.autoIncrementIncrement]);
        }
        await conn.beginTransaction();
        await insertWalletRows(conn, env.config.wallet_database, rows);
        if (w.maxCommitDelayMs > 0) await sleep(Math.random() * w.maxCommitDelayMs);
        if (Math.random() < w.rollbackRate) {
          await conn.rollback();
          rolledBack += rows.length;
        } else {
          await conn.commit();
          committed += rows.length;
          for (const r of rows) acknowledged.add(r.event_id!);
        }
      } catch {
        // The server went away (a restart fault): whether these rows committed is read back from the outbox at
        // the end, which is the truth of what was written.
        cut.push(...rows.map((r) => r.event_id!));
        conn?.destroy();
        conn = null;
        await sleep(200);
      }
      await sleep((size / w.ratePerSecond) * w.connections * 1000);
    }
    conn?.release();
  };
  const writers = Promise.all(Array.from({ length: w.connections }, writer)).then(() => {
    writing = false;
  });
  let injecting = true;
  const sideStream = async () => {
    for (let k = 1; writing || injecting; k++) {
      const fact = sideFact(k, env, intended);
      // A write cut by a fault may have committed or not: the outbox is read back at the end.
      await retry(fact.write, 10)
        .then(() => acknowledged.add(fact.id))
        .catch(() => undefined);
      await sleep(s.sideEveryMs ?? 100);
    }
  };
  await Promise.all([
    writers,
    (async () => {
      await s.inject?.(h);
      injecting = false;
    })(),
    sideStream(),
  ]);
  await s.beforeDrain?.(h);
  process.stderr.write(`[faults] ${s.name}: written and injected; draining\n`);
  const writtenAt = Date.now();
  // What the owners committed is what the outbox holds (a commit cut by a server restart may have landed or not).
  const [outboxRows] = await retry(() =>
    env.owner.query<any[]>(`SELECT app_code, event_id, event_type, user_id FROM \`${env.config.wallet_database}\`.wallet_outbox`),
  );
  const committedIds = new Set<string>(outboxRows.map((r) => r.event_id as string));
  // After a failover, what the old primary committed is on its disk: restarted (crash recovery), it tells which facts
  // the promoted replica never got — the owner's loss — from messages for facts never committed anywhere.
  const oldPrimaryIds = new Set<string>();
  if (replicated) {
    await mariadb!.start();
    const old = await mysql.createConnection({ uri: mariadb!.url });
    try {
      for (const [database, table] of [
        [env.config.wallet_database, 'wallet_outbox'],
        [env.config.room_database, 'room_outbox'],
        [env.config.activity_database, 'activity_outbox'],
      ] as const) {
        const [rows] = await old.query<any[]>(`SELECT event_id FROM \`${database}\`.${table}`);
        for (const r of rows) oldPrimaryIds.add(String(r.event_id));
      }
    } finally {
      await old.end();
    }
  }
  // Rows a scenario's injection wrote itself (late commits) are known only from the outbox.
  for (const r of outboxRows)
    if (!intended.has(r.event_id))
      intended.set(r.event_id, { app: String(r.app_code), user: String(r.user_id), kind: WALLET_KINDS[r.event_type] ?? 'wallet_notice' });
  for (const database of [env.config.room_database, env.config.activity_database]) {
    const table = database === env.config.room_database ? 'room_outbox' : 'activity_outbox';
    const [rows] = await retry(() => env.owner.query<any[]>(`SELECT event_id FROM \`${database}\`.${table}`));
    for (const r of rows) committedIds.add(r.event_id as string);
  }
  // Facts committed (on the old primary, or acknowledged) and gone from the outbox at the end: a failover promoted a
  // replica that never got them.
  const ownerLost = [...new Set([...acknowledged, ...oldPrimaryIds])].filter((id) => !committedIds.has(id));
  const ownerLostIds = new Set(ownerLost);
  const inboxKinds = new Set(env.config.inbox.kinds);
  const pushKinds = new Set(env.config.tencent_push.enabled ? env.config.tencent_push.kinds : []);
  const channelsOf = (id: string) => {
    const kind = intended.get(id)!.kind;
    return ['tencent_im_c2c', ...(inboxKinds.has(kind) ? ['inbox'] : []), ...(pushKinds.has(kind) ? ['tencent_push'] : [])];
  };
  const expectedRows = [...committedIds].reduce((n, id) => n + channelsOf(id).length, 0);

  // Drain: every committed event reaches a final ledger state.
  let finalCount = 0;
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    const [rows] = await retry(() =>
      env.notice.query<any[]>(`SELECT COUNT(*) AS n FROM notice_delivery_events WHERE status IN (${[...FINAL].map(() => '?').join(', ')})`, [...FINAL]),
    );
    finalCount = Number(rows[0].n);
    if (finalCount >= expectedRows) break;
    await sleep(250);
  }
  const drainSeconds = (Date.now() - writtenAt) / 1000;
  process.stderr.write(`[faults] ${s.name}: drained in ${drainSeconds.toFixed(1)} s; checking the open streams\n`);
  const streamCounts = await streams.settle(10_000, ownerLostIds).finally(() => streams.close());

  const [ledger] = await retry(() => env.notice.query<any[]>('SELECT source_event_id, channel, status, last_error_code FROM notice_delivery_events'));
  // A superseded row is only right if a newer version of the same balance reached the user.
  const [unjustified] = await retry(() =>
    env.notice.query<any[]>(
      `SELECT s.source_event_id FROM notice_delivery_events s WHERE s.status = 'superseded' AND NOT EXISTS (
       SELECT 1 FROM notice_delivery_events d WHERE d.supersede_key = s.supersede_key AND d.channel = s.channel AND d.supersede_version > s.supersede_version AND d.status = 'delivered')`,
    ),
  );
  const unjustifiedIds = new Set(unjustified.map((r) => String(r.source_event_id)));
  const ledgerByKey = new Map(ledger.map((r) => [`${r.source_event_id}|${r.channel}`, r]));
  // What reached users, per channel: fake-im's accepted messages, and the rows in the inbox table.
  const messages = env.fakeIm.messages();
  const reached: Record<string, Map<string, string[]>> = { tencent_im_c2c: new Map(), inbox: new Map(), tencent_push: new Map() };
  // A message sent through another app's Tencent account reached another person: counted as misdirected.
  let crossApp = 0;
  for (const m of messages) {
    if (m.duplicate) continue;
    const data = JSON.parse(m.data) as { event_id: string; app_code: string };
    if (APP_OF_SDK[m.sdkAppId] !== data.app_code) crossApp++;
    const id = data.event_id;
    reached.tencent_im_c2c!.set(id, [...(reached.tencent_im_c2c!.get(id) ?? []), m.toAccount]);
  }
  const [items] = await retry(() => env.notice.query<any[]>('SELECT source_event_id, user_id FROM notice_inbox_items'));
  for (const it of items) reached.inbox!.set(it.source_event_id, [...(reached.inbox!.get(it.source_event_id) ?? []), it.user_id]);
  // A push carries accounts, not event ids: a user's pushes are matched to that user's push rows, the ones the
  // ledger says were sent first; a push beyond those rows is one the user did not want (suppressed, or over the cap).
  // The cap this scenario runs with (the lowest max of its windows; none: no limit).
  const cap = Math.min(...env.config.tencent_push.frequency_cap.map((w) => w.max), Infinity);
  const pushIdsOfUser = new Map<string, string[]>();
  for (const [id, v] of intended)
    if (pushKinds.has(v.kind) && (committedIds.has(id) || ownerLostIds.has(id))) pushIdsOfUser.set(v.user, [...(pushIdsOfUser.get(v.user) ?? []), id]);
  const sentFirst = (id: string) => ({ delivered: 0, delivered_unconfirmed: 1 })[ledgerByKey.get(`${id}|tencent_push`)?.status as string] ?? 2;
  const pushesOfUser = new Map<string, number>();
  let unwanted = 0;
  const unwantedWhy: string[] = [];
  for (const p of env.fakeIm.pushes()) {
    if (p.duplicate) continue;
    for (const user of p.accounts) pushesOfUser.set(user, (pushesOfUser.get(user) ?? 0) + 1);
  }
  for (const [user, count] of pushesOfUser) {
    const ids = [...(pushIdsOfUser.get(user) ?? [])].sort((a, b) => sentFirst(a) - sentFirst(b));
    ids.slice(0, count).forEach((id) => reached.tencent_push!.set(id, [user]));
    // More pushes than rows: the last row reached the user more than once (or, with no row, a push never written).
    if (count > ids.length && ids.length > 0) reached.tencent_push!.set(ids.at(-1)!, Array(count - ids.length + 1).fill(user));
    if (ids.length === 0) reached.tencent_push!.set(`unknown-push-user-${user}`, [user]);
    // Mandatory kinds are not counted by the cap (none push today); every other push is.
    if (count > cap) {
      unwanted += count - cap;
      unwantedWhy.push(
        `${user}: ${count} pushes over a cap of ${cap} (rows: ${ids.map((id) => `${id}=${ledgerByKey.get(`${id}|tencent_push`)?.status}`).join(', ')})`,
      );
    }
  }
  // Nothing reaches a quiet user's phone before their quiet hours end.
  if (h.quietUntilMs !== null)
    for (const p of env.fakeIm.pushes())
      for (const user of p.accounts)
        if (QUIET_USERS.includes(user) && p.receivedAtMs < h.quietUntilMs) {
          unwanted++;
          unwantedWhy.push(`${user}: a push ${h.quietUntilMs - p.receivedAtMs} ms before their quiet hours ended`);
        }
  // How the quiet users' pushes went out: how many, and when after their quiet hours ended (ms).
  const quietPushAfter =
    h.quietUntilMs === null
      ? []
      : env.fakeIm
          .pushes()
          .flatMap((p) => p.accounts.filter((u) => QUIET_USERS.includes(u)).map(() => p.receivedAtMs - h.quietUntilMs!))
          .sort((a, b) => a - b);
  // Digests: the counts a user's pushes carry (a summary its digest_count, any other push 1) must add up to that
  // user's push rows that were sent or counted in a digest: each window yields one summary with the right count.
  let digestMismatch = 0;
  if (Object.keys(env.config.tencent_push.digest).length > 0) {
    const carried = new Map<string, number>();
    for (const p of env.fakeIm.pushes()) {
      if (p.duplicate) continue;
      const count = Number((JSON.parse(String(p.offlinePush.Ext ?? '{}')) as { digest_count?: number }).digest_count ?? 1);
      for (const user of p.accounts) carried.set(user, (carried.get(user) ?? 0) + count);
    }
    const owed = new Map<string, number>();
    // A user with an unconfirmed push (the answer lost, not resent by policy) may or may not have got that summary:
    // not checked strictly.
    const ambiguous = new Set<string>();
    for (const [id, v] of intended) {
      const status = ledgerByKey.get(`${id}|tencent_push`)?.status;
      if (committedIds.has(id) && ['delivered', 'digested'].includes(status)) owed.set(v.user, (owed.get(v.user) ?? 0) + 1);
      if (status === 'delivered_unconfirmed') ambiguous.add(v.user);
    }
    for (const user of new Set([...carried.keys(), ...owed.keys()]))
      if (ambiguous.has(user)) continue;
      else if ((carried.get(user) ?? 0) !== (owed.get(user) ?? 0)) {
        digestMismatch++;
        unwantedWhy.push(`${user}: pushes carry ${carried.get(user) ?? 0} notices, the ledger sent or digested ${owed.get(user) ?? 0}`);
      }
  }
  let capShort = 0;
  for (const [user, ids] of pushIdsOfUser) if (ids.length >= cap && (pushesOfUser.get(user) ?? 0) < cap) capShort++;
  // What the cap counted for a user: every push the ledger says went out, delivered or unconfirmed. An unconfirmed one
  // that never reached fake-im (the call timed out before it was processed) still fills the cap — the over-count
  // capShort reports — so the user's later FREQUENCY_CAP rows are justified, not lost.
  const spentOfUser = new Map<string, number>();
  for (const [user, ids] of pushIdsOfUser)
    spentOfUser.set(user, ids.filter((id) => ['delivered', 'delivered_unconfirmed'].includes(ledgerByKey.get(`${id}|tencent_push`)?.status as string)).length);

  const failedByCode: Record<string, number> = {};
  for (const r of ledger)
    if (r.status === 'failed') {
      const code = `${r.channel === 'tencent_im_c2c' ? '' : `${r.channel}:`}${r.last_error_code}`;
      failedByCode[code] = (failedByCode[code] ?? 0) + 1;
    }
  const byChannel: Record<string, ChannelCounts> = {};
  for (const channel of Object.keys(reached))
    byChannel[channel] = {
      expected: 0,
      delivered: 0,
      failed: 0,
      superseded: 0,
      suppressed: 0,
      digested: 0,
      unconfirmed: 0,
      unconfirmed_unreached: 0,
      stuck: 0,
      lost: 0,
    };
  let misdirected = crossApp;
  const unconfirmedByCode: Record<string, number> = {};
  for (const id of committedIds) {
    for (const channel of channelsOf(id)) {
      const counts = byChannel[channel]!;
      counts.expected++;
      const row = ledgerByKey.get(`${id}|${channel}`);
      const got = reached[channel]!.get(id) ?? [];
      const fact = intended.get(id)!;
      if (row && !FINAL.has(row.status)) counts.stuck++;
      else if (!row || (row.status === 'delivered' && got.length === 0) || (channel === 'tencent_im_c2c' && unjustifiedIds.has(id))) counts.lost++;
      else if (row.status === 'delivered') counts.delivered++;
      else if (row.status === 'delivered_unconfirmed') {
        counts.unconfirmed++;
        if (got.length === 0) counts.unconfirmed_unreached++;
        const why = `${got.length === 0 ? 'unreached' : 'reached'}:${row.last_error_code}`;
        unconfirmedByCode[why] = (unconfirmedByCode[why] ?? 0) + 1;
      } else if (row.status === 'failed') counts.failed++;
      else if (row.status === 'suppressed') {
        // Right only if the user chose it (and the kind is not mandatory) or the cap was full: otherwise a lost notice.
        const chosen =
          row.last_error_code === 'PREFERENCE' && isOff(fact.app, fact.user, fact.kind, channel) && !env.config.preferences.mandatory_kinds.includes(fact.kind);
        const capped =
          row.last_error_code === 'FREQUENCY_CAP' &&
          channel === 'tencent_push' &&
          Math.max(pushesOfUser.get(fact.user) ?? 0, spentOfUser.get(fact.user) ?? 0) >= cap;
        if (!chosen && !capped) counts.lost++;
        else counts.suppressed++;
        if (got.length > 0) {
          unwanted++;
          unwantedWhy.push(`${id} on ${channel}: suppressed (${row.last_error_code}) yet reached ${got.join(', ')}`);
        }
      } else if (row.status === 'digested') {
        counts.digested++;
        if (got.length > 0) {
          unwanted++;
          unwantedWhy.push(`${id} on ${channel}: digested yet pushed on its own`);
        }
      } else if (row.status === 'superseded') counts.superseded++;
      else counts.lost++; // expired: no scenario sets an expiry, so none may end so
      misdirected += got.filter((user) => user !== intended.get(id)!.user).length;
    }
  }
  const lost = Object.values(byChannel).reduce((n, c) => n + c.lost, 0);
  const stuck = Object.values(byChannel).reduce((n, c) => n + c.stuck, 0);
  const ownerLostReached = ownerLost.filter((id) => Object.values(reached).some((m) => m.has(id))).length;
  const phantomIds = Object.entries(reached).flatMap(([channel, m]) =>
    [...m.keys()].filter((id) => !committedIds.has(id) && !ownerLostIds.has(id)).map((id) => `${channel}:${id}`),
  );
  const phantom = phantomIds.length;
  const twiceIds = Object.entries(reached).flatMap(([channel, m]) =>
    [...m.entries()].filter(([, users]) => users.length > 1).map(([id]) => `${channel}:${id}`),
  );
  const userVisibleDuplicates = twiceIds.length;

  for (const { proc } of procs) if (alive(proc)) proc.child.kill('SIGTERM');
  // A process that does not stop on SIGTERM is a defect to report, not a reason to hang the suite.
  await Promise.all(
    procs.map(async ({ role, proc }) => {
      const stopped = await Promise.race([proc.exited.then(() => true), sleep(15_000).then(() => false)]);
      if (!stopped) {
        injections.push(`${role} pid ${proc.child.pid} still running 15 s after SIGTERM; killed`);
        proc.child.kill('SIGKILL');
        await proc.exited;
      }
    }),
  );
  const logs = procs.map(({ role, proc }, i) => ({ file: join(dir, `${i}-${role}.log`), text: proc.output() }));
  for (const l of logs) writeFileSync(l.file, l.text);
  const secretLeaks = scanForSecrets(logs, env.config.apps.lalu!.tencent_im!.secret_key);

  const result: ScenarioResult = {
    scenario: s.name,
    title: s.title,
    written: committedIds.size,
    written_for_inbox: [...committedIds].filter((id) => inboxKinds.has(intended.get(id)!.kind)).length,
    rolled_back: rolledBack + cut.filter((id) => !committedIds.has(id)).length,
    owner_lost: { facts: ownerLost.length, reached: ownerLostReached, sample: ownerLost.slice(0, 5) },
    delivered: ledger.filter((r) => r.status === 'delivered').length,
    failed: ledger.filter((r) => r.status === 'failed').length,
    superseded: ledger.filter((r) => r.status === 'superseded').length,
    stuck,
    by_channel: byChannel,
    misdirected,
    unwanted,
    unwanted_why: unwantedWhy.slice(0, 20),
    cap_short: capShort,
    digest_mismatch: digestMismatch,
    streams: streamCounts,
    ...(h.quietUntilMs !== null
      ? {
          quiet_pushes: {
            count: quietPushAfter.length,
            first_after_ms: quietPushAfter[0] ?? null,
            median_after_ms: quietPushAfter[Math.floor(quietPushAfter.length / 2)] ?? null,
          },
        }
      : {}),
    failed_by_code: failedByCode,
    unconfirmed_by_code: unconfirmedByCode,
    fake_im_requests: env.fakeIm.getStats().requests,
    push_requests: env.fakeIm.getPushStats().requests,
    push_stats: env.fakeIm.getPushStats(),
    duplicate_sends: messages.filter((m) => m.duplicate).length + env.fakeIm.pushes().filter((p) => p.duplicate).length,
    user_visible_duplicates: userVisibleDuplicates,
    lost,
    phantom,
    phantom_sample: phantomIds.slice(0, 10),
    twice_sample: twiceIds.slice(0, 10),
    drain_seconds: Math.round(drainSeconds * 10) / 10,
    injections,
    secret_leaks: secretLeaks,
  };
  await env.close();
  await redis.destroy();
  await vip?.down();
  await replica?.destroy();
  await mariadb?.destroy();
  return result;
}

interface Intended {
  app: string;
  user: string;
  kind: string;
}

const WALLET_KINDS: Record<string, string> = { WalletBalanceChanged: 'wallet_notice', VipActivated: 'vip_notice' };

/** The k-th fact of the side stream, noted in `intended` before it is written. */
function sideFact(k: number, env: TestEnv, intended: Map<string, Intended>): { id: string; write: () => Promise<void> } {
  const at = { created_at_ms: Date.now() };
  switch (k % 6) {
    case 0: {
      const f = { ...kick(k), ...at };
      intended.set(f.event_id, { app: 'lalu', user: (f.payload as any).target_user_id, kind: 'room_notice' });
      return { id: f.event_id, write: () => insertRoomRows(env.owner, env.config.room_database, [f]) };
    }
    case 1: {
      const f = { ...rocket(k), ...at };
      intended.set(f.event_id, { app: 'lalu', user: (f.payload as any).reward_user_id, kind: 'room_notice' });
      return { id: f.event_id, write: () => insertRoomRows(env.owner, env.config.room_database, [f]) };
    }
    case 5: {
      const r = { ...vipActivated(k), ...at };
      intended.set(r.event_id!, { app: 'lalu', user: r.user_id!, kind: 'vip_notice' });
      return { id: r.event_id!, write: () => insertWalletRows(env.owner, env.config.wallet_database, [r]) };
    }
    default: {
      // Every third activity fact goes to one of two heavy users, so the push cap holds some back.
      const r = { ...activityEvent(k), ...at, ...(k % 6 === 4 ? { user_id: String(69000 + (Math.floor(k / 6) % 2)) } : {}) };
      intended.set(r.event_id, { app: 'lalu', user: r.user_id!, kind: 'activity_notice' });
      return { id: r.event_id, write: () => insertActivityRows(env.owner, env.config.activity_database, [r]) };
    }
  }
}

/** No captured log line may hold the Tencent secret key or a UserSig (minted sigs are zlib+base64: "eJ…"). */
function scanForSecrets(logs: Array<{ file: string; text: string }>, secret: string): string[] {
  const leaks: string[] = [];
  for (const { file, text } of logs) {
    if (text.includes(secret)) leaks.push(`${file}: secret key`);
    if (/usersig=[^&\s"]+/i.test(text)) leaks.push(`${file}: usersig query parameter`);
    if (/eJ[wyz][A-Za-z0-9*_-]{40,}/.test(text)) leaks.push(`${file}: UserSig-like token`);
  }
  return leaks;
}

/** A read right after a server restart may meet a connection the pool has not yet noticed is dead. */
async function retry<T>(read: () => Promise<T>, attempts = 20): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await read();
    } catch (err) {
      if (i >= attempts) throw err;
      await sleep(500);
    }
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function merge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    out[k] =
      cur && typeof cur === 'object' && !Array.isArray(cur) && v && typeof v === 'object' && !Array.isArray(v)
        ? merge(cur as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

/** Still running: a process killed by a signal has exitCode null too, so both are checked. */
export function alive(proc: Spawned): boolean {
  return proc.child.exitCode === null && proc.child.signalCode === null;
}
