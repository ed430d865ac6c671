import { createWorld, PIPELINE, processUsage } from './world.ts';
import { percentile } from './proc-stats.ts';
import { balanceChanged, insertWalletRows } from '../test/helpers/outbox.ts';
import { insertRoomRows, kick } from '../test/helpers/room.ts';

const HALA = { sdkAppId: 1400000002, secretKey: 'hala-bench-secret-000000000000001', adminIdentifier: 'administrator' };
const APP_OF_SDK: Record<number, string> = { 1400000001: 'lalu', [HALA.sdkAppId]: 'hala' };

export interface AppsIsolationResult {
  seconds: number;
  a_backlog: number;
  a_sent_per_second: number;
  a_quota_share: number;
  a_over_frequency_share: number;
  b_kicks: { events: number; p50_ms: number; p99_ms: number };
  b_balances: { events: number; p50_ms: number; p99_ms: number };
}

/** Calls `write(n)` at `rate`/s for `seconds`; returns event id → commit time. */
async function stream(rate: number, seconds: number, write: (n: number) => Promise<string>): Promise<Map<string, number>> {
  const committed = new Map<string, number>();
  const started = Date.now();
  for (let n = 1; n <= Math.round(rate * seconds); n++) {
    const wait = started + (n / rate) * 1000 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    committed.set(await write(n), Date.now());
  }
  return committed;
}

/**
 * Issue 31's isolation: app A (lalu) in a gift storm — a wallet backlog bigger than its 200/s quota drains in the
 * window — while app B (hala) gets a kick every 250 ms and 50 balances/s. fake-im enforces 200/s per app, strictly.
 */
export async function runAppsIsolation(seconds: number, imLatencyMs: number): Promise<AppsIsolationResult> {
  const quota = 200;
  const world = await createWorld(
    {
      ...PIPELINE,
      room_notice_worker: { enabled: true, poll_interval: '100ms', batch_size: 100, lock_ttl: '30s', max_retry_count: 10, gap_grace: '60s' },
      tencent_im: { ...PIPELINE.tencent_im, rate_limit_per_second: quota, apps: { hala: { sdk_app_id: HALA.sdkAppId, secret_key: HALA.secretKey } } },
    },
    { fakeImApps: [HALA] },
  );
  try {
    world.env.fakeIm.setFaults({ delay_ms: imLatencyMs, rate_limit_per_second: quota });
    const backlog = quota * (seconds + 10);
    for (let at = 0; at < backlog; at += 2000) {
      await insertWalletRows(
        world.env.owner,
        world.env.config.wallet_database,
        Array.from({ length: Math.min(2000, backlog - at) }, (_, i) => ({
          ...balanceChanged(at + i + 1),
          event_id: `gift_${at + i + 1}`,
          user_id: String(50000 + ((at + i) % 5000)),
        })),
      );
    }
    await world.spawn('ingest');
    await world.spawn('deliver');
    await new Promise((r) => setTimeout(r, 3000)); // A's storm is at full quota before B starts
    const windowStart = Date.now();
    const [kicks, balances] = await Promise.all([
      stream(4, seconds, async (n) => {
        const k = { ...kick(n), app_code: 'hala', event_id: `b_kick_${n}` };
        await insertRoomRows(world.env.owner, world.env.config.room_database, [k]);
        return k.event_id;
      }),
      stream(50, seconds, async (n) => {
        const row = { ...balanceChanged(n), app_code: 'hala', event_id: `b_bal_${n}`, user_id: String(70000 + (n % 200)) };
        await insertWalletRows(world.env.owner, world.env.config.wallet_database, [row]);
        return row.event_id;
      }),
    ]);
    const windowEnd = Date.now();
    const deadline = Date.now() + 120_000;
    const bDelivered = () => world.env.fakeIm.delivered().filter((m) => m.sdkAppId === HALA.sdkAppId);
    while (bDelivered().length < kicks.size + balances.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const latencies = (committed: Map<string, number>) => {
      const ms = bDelivered()
        .map((m) => JSON.parse(m.data).event_id as string)
        .filter((id) => committed.has(id))
        .map((id) => world.env.fakeIm.delivered().find((m) => JSON.parse(m.data).event_id === id)!.receivedAtMs - committed.get(id)!)
        .sort((a, b) => a - b);
      return { events: ms.length, p50_ms: percentile(ms, 50), p99_ms: percentile(ms, 99) };
    };
    const aSent = world.env.fakeIm
      .delivered()
      .filter((m) => APP_OF_SDK[m.sdkAppId] === 'lalu' && m.receivedAtMs >= windowStart && m.receivedAtMs <= windowEnd).length;
    const aSeconds = (windowEnd - windowStart) / 1000;
    const aStats = (world.env.fakeIm.getStats().by_app as Record<string, { requests: number; rate_limited: number }>)['1400000001'] ?? {
      requests: 0,
      rate_limited: 0,
    };
    return {
      seconds,
      a_backlog: backlog,
      a_sent_per_second: Math.round(aSent / aSeconds),
      a_quota_share: Math.round((aSent / aSeconds / quota) * 1000) / 1000,
      a_over_frequency_share: Math.round((aStats.rate_limited / Math.max(1, aStats.requests)) * 100_000) / 100_000,
      b_kicks: latencies(kicks),
      b_balances: latencies(balances),
    };
  } finally {
    await world.close();
  }
}

export interface AppsCapacityResult {
  apps: number;
  events: number;
  events_per_second: number;
  deliver_cpu_ms_per_event: number;
  ingest_cpu_ms_per_event: number;
}

/** Capacity with the rate limit off, the backlog spread over `apps` apps (each its own Tencent app, queues and pacer). */
export async function runAppsCapacity(apps: number, events: number, imLatencyMs: number): Promise<AppsCapacityResult> {
  const extra = Array.from({ length: apps - 1 }, (_, i) => ({
    code: `app${i + 2}`,
    sdkAppId: 1400000100 + i,
    secretKey: `bench-app-secret-${i}-000000000000`,
    adminIdentifier: 'administrator',
  }));
  const world = await createWorld(
    {
      ...PIPELINE,
      tencent_im: { ...PIPELINE.tencent_im, apps: Object.fromEntries(extra.map((a) => [a.code, { sdk_app_id: a.sdkAppId, secret_key: a.secretKey }])) },
    },
    { fakeImApps: extra.map(({ sdkAppId, secretKey, adminIdentifier }) => ({ sdkAppId, secretKey, adminIdentifier })) },
  );
  try {
    world.env.fakeIm.setFaults({ delay_ms: imLatencyMs });
    const codes = ['lalu', ...extra.map((a) => a.code)];
    for (let at = 0; at < events; at += 2000) {
      await insertWalletRows(
        world.env.owner,
        world.env.config.wallet_database,
        Array.from({ length: Math.min(2000, events - at) }, (_, i) => ({ ...balanceChanged(at + i + 1), app_code: codes[(at + i) % codes.length] })),
      );
    }
    await world.spawn('ingest');
    await world.spawn('deliver');
    const deadline = Date.now() + 300_000;
    while (world.env.fakeIm.delivered().length < events && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const received = world.env.fakeIm
      .delivered()
      .map((m) => m.receivedAtMs)
      .sort((a, b) => a - b);
    const usage = processUsage(world);
    const cpu = (role: string) => usage.filter((u) => u.role === role).reduce((n, u) => n + u.cpu, 0);
    return {
      apps,
      events,
      events_per_second: Math.round(received.length / ((received[received.length - 1]! - received[0]!) / 1000)),
      deliver_cpu_ms_per_event: Math.round((cpu('deliver') / events) * 1000 * 1000) / 1000,
      ingest_cpu_ms_per_event: Math.round((cpu('ingest') / events) * 1000 * 1000) / 1000,
    };
  } finally {
    await world.close();
  }
}
