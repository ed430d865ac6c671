import type { RowDataPacket } from 'mysql2/promise';
import { createWorld, PIPELINE, processUsage, redisCommandsPerEvent, type World } from './world.ts';
import { STATUS_TABLE } from '../src/ledger/status.ts';
import { preload } from './writer.ts';
import { median } from './proc-stats.ts';
import { summarise } from './profile-summary.ts';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { insertActivityRows, type ActivityRow } from '../test/helpers/activity.ts';

/** One capacity run's cost: throughput and what each event cost every process and server. */
export interface CostRun {
  events: number;
  deliveries: number;
  events_per_second: number;
  deliveries_per_second: number;
  /** CPU per event, ms. */
  cpu_ms_per_event: { ingest: number; deliver: number; mariadb: number; redis: number };
  mysql_statements_per_event: number;
  /** Bytes MariaDB received per event (every client on the server: shared, so other work shows here too). */
  mysql_bytes_per_event: number;
  redis_commands_per_event: number;
  redis_commands_by_name: Record<string, number>;
  peak_rss_mb: Record<string, number>;
  /** Each process's pid by role#n (where a profile run finds its profiles). */
  pids: Record<string, number>;
}

export type CostVariant = 'c2c' | 'c2c_inbox_push';

/**
 * Issue 37's capacity measure, for either tree: a backlog of `events` facts drained by one ingest and one deliver
 * process, the rate limit off. `c2c`: wallet balance facts, one C2C message each (the capacity phase's shape).
 * `c2c_inbox_push`: activity SystemNotice facts routed to C2C, the inbox and tencent_push (identical push content,
 * so pushes batch), one user each. Timed from the deliver process's start to the last ledger row final.
 */
export async function costRun(variant: CostVariant, events: number, imLatencyMs: number, bin?: string): Promise<CostRun> {
  const multi = variant === 'c2c_inbox_push';
  const world = await createWorld(
    {
      ...PIPELINE,
      ...(multi
        ? {
            wallet_notice_worker: { enabled: false },
            activity_notice_worker: { enabled: true, poll_interval: '100ms', batch_size: 500, lock_ttl: '30s', max_retry_count: 10, gap_grace: '60s' },
            inbox: { enabled: true, kinds: ['activity_notice'] },
            tencent_push: { enabled: true, kinds: ['activity_notice'], rate_limit_per_second: 30 },
          }
        : {}),
    },
    { bin },
  );
  try {
    world.env.fakeIm.setFaults({ delay_ms: imLatencyMs });
    world.env.fakeIm.setPushFaults({ delay_ms: imLatencyMs });
    if (multi) await preloadActivity(world, events);
    else await preload(world.env.owner, world.env.config.wallet_database, events);
    const deliveries = events * (multi ? 3 : 1);
    await world.spawn('ingest');
    const before = await world.counters();
    const startedAt = Date.now();
    await world.spawn('deliver');
    await waitFinal(world, deliveries, 600_000);
    const seconds = (Date.now() - startedAt) / 1000;
    const after = await world.counters();
    const usage = processUsage(world);
    const perEvent = (cpuS: number) => Math.round((cpuS / events) * 1000 * 1000) / 1000;
    return {
      events,
      deliveries,
      events_per_second: Math.round(events / seconds),
      deliveries_per_second: Math.round(deliveries / seconds),
      cpu_ms_per_event: {
        ingest: perEvent(usage.filter((u) => u.role === 'ingest').reduce((s, u) => s + u.cpu, 0)),
        deliver: perEvent(usage.filter((u) => u.role === 'deliver').reduce((s, u) => s + u.cpu, 0)),
        mariadb: perEvent(after.mysqlCpu - before.mysqlCpu),
        redis: perEvent(after.redisCpu - before.redisCpu),
      },
      mysql_statements_per_event: Math.round(((after.mysqlQuestions - before.mysqlQuestions) / events) * 100) / 100,
      mysql_bytes_per_event: Math.round((after.mysqlBytesReceived - before.mysqlBytesReceived) / events),
      redis_commands_per_event: Math.round(((after.redisCommands - before.redisCommands) / events) * 100) / 100,
      redis_commands_by_name: redisCommandsPerEvent(before, after, events),
      peak_rss_mb: Object.fromEntries(usage.map((u, i) => [`${u.role}#${i}`, u.peakRssMb])),
      pids: Object.fromEntries(usage.map((u, i) => [`${u.role}#${i}`, u.pid])),
    };
  } finally {
    await world.close();
  }
}

/** A profile's summary for the report: the largest origins and functions by self time, as shares. */
export interface ProfileDigest {
  cpu_ms: number;
  by_origin: Array<[string, number]>;
  top_functions: Array<[string, number]>;
}

/**
 * One cost run of this tree with V8's CPU profiler on in ingest and deliver (BENCH_PROFILE), summarised per process.
 * Its CPU figures are the profiler's, so the measured runs stay unprofiled.
 */
export async function costProfile(variant: CostVariant, events: number, imLatencyMs: number): Promise<Record<string, ProfileDigest>> {
  const dir = join('.tmp', 'prof');
  const was = process.env.BENCH_PROFILE;
  process.env.BENCH_PROFILE = '1';
  let run: CostRun;
  try {
    run = await costRun(variant, events, imLatencyMs);
  } finally {
    if (was === undefined) delete process.env.BENCH_PROFILE;
    else process.env.BENCH_PROFILE = was;
  }
  const files = existsSync(dir) ? readdirSync(dir) : [];
  const digests: Record<string, ProfileDigest> = {};
  for (const [role, pid] of Object.entries(run.pids)) {
    const file = files.find((f) => f.includes(`.${pid}.`) && f.endsWith('.cpuprofile'));
    if (!file) continue;
    const s = summarise(JSON.parse(readFileSync(join(dir, file), 'utf8')));
    const share = (ms: number) => Math.round((ms / s.totalMs) * 1000) / 10;
    digests[role] = {
      cpu_ms: Math.round(s.totalMs),
      by_origin: s.byOrigin.slice(0, 8).map(([k, ms]) => [k, share(ms)]),
      top_functions: s.byFunction.slice(0, 10).map(([k, ms]) => [k, share(ms)]),
    };
  }
  return digests;
}

async function preloadActivity(world: World, events: number): Promise<void> {
  const payload = { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body', params: { minutes: 30 } };
  for (let from = 0; from < events; from += 1000) {
    const rows: ActivityRow[] = [];
    for (let n = from; n < Math.min(events, from + 1000); n++)
      rows.push({ event_id: `cost_${n}`, event_type: 'SystemNotice', user_id: String(600000 + n), payload, created_at_ms: Date.now() });
    await insertActivityRows(world.env.owner, world.env.config.activity_database, rows);
  }
}

const FINAL = Object.entries(STATUS_TABLE).flatMap(([status, t]) => (t.final ? [status] : []));

async function waitFinal(world: World, rows: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [r] = await world.env.notice.query<RowDataPacket[]>(
      `SELECT COUNT(*) AS n FROM notice_delivery_events WHERE status IN (${FINAL.map(() => '?').join(', ')})`,
      FINAL,
    );
    const n = Number(r[0]!.n);
    if (n >= rows) return;
    if (Date.now() > deadline) throw new Error(`cost: only ${n}/${rows} ledger rows final`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Medians of a variant's runs, and every run's throughput beside them. */
export function summariseCost(runs: CostRun[]) {
  const m = (pick: (r: CostRun) => number) => median(runs.map(pick));
  return {
    runs_events_per_second: runs.map((r) => r.events_per_second),
    events_per_second: m((r) => r.events_per_second),
    deliveries_per_second: m((r) => r.deliveries_per_second),
    cpu_ms_per_event: {
      ingest: m((r) => r.cpu_ms_per_event.ingest),
      deliver: m((r) => r.cpu_ms_per_event.deliver),
      mariadb: m((r) => r.cpu_ms_per_event.mariadb),
      redis: m((r) => r.cpu_ms_per_event.redis),
    },
    runs_deliver_cpu_ms_per_event: runs.map((r) => r.cpu_ms_per_event.deliver),
    mysql_statements_per_event: m((r) => r.mysql_statements_per_event),
    mysql_bytes_per_event: m((r) => r.mysql_bytes_per_event),
    redis_commands_per_event: m((r) => r.redis_commands_per_event),
    redis_commands_by_name: runs[Math.floor(runs.length / 2)]!.redis_commands_by_name,
    peak_rss_mb: runs.at(-1)!.peak_rss_mb,
  };
}
