/**
 * Overload: a gift storm against Tencent's quota. `users` users each get `versions` balance changes in one burst,
 * while a kick is committed every 250 ms; two deliver processes, the 200/s limit, and fake-im (in its own process)
 * refusing more than 200 calls in any sliding second, counting the refused calls too, as a real gateway does.
 * Run once as shipped (priorities, superseded balances skipped) and once with both off (one FIFO queue, every
 * balance sent), in the same bench run.
 */
import { createWorld, PIPELINE, type World } from './world.ts';
import { RemoteFakeIm } from './remote-fake-im.ts';
import { insertWalletRows, type WalletRow } from '../test/helpers/outbox.ts';
import { insertRoomRows, kick } from '../test/helpers/room.ts';
import { percentile } from './proc-stats.ts';

export interface OverloadOptions {
  users: number;
  versions: number;
  kickEveryMs: number;
  imLatencyMs: number;
  /** Priorities and superseded skipping on (as shipped) or both off. */
  shipped: boolean;
  /** Config on top (e.g. preferences on or off), and data to seed before the processes start. */
  overrides?: Record<string, unknown>;
  setup?: (world: World) => Promise<void>;
}

const STORM_USER_BASE = 50_000;

function stormRow(user: number, version: number, nowMs: number): WalletRow {
  const userId = String(STORM_USER_BASE + user);
  return {
    app_code: 'lalu',
    event_id: `storm_${user}_${version}`,
    event_type: 'WalletBalanceChanged',
    user_id: userId,
    created_at_ms: nowMs,
    payload: JSON.stringify({
      transaction_id: `storm_tx_${user}_${version}`,
      command_id: `gift_${user}_${version}`,
      asset_type: 'COIN',
      available_delta: 10,
      frozen_delta: 0,
      available_after: 1000 + version * 10,
      frozen_after: 0,
      balance_version: version,
      metadata: { scene: 'gift_storm' },
    }),
  };
}

export async function overloadRun(o: OverloadOptions) {
  const im = await RemoteFakeIm.reservePort();
  // Explicit both ways: PIPELINE turns skipping off for the other phases.
  const deliver = o.shipped ? { skip_superseded: { WalletBalanceChanged: true } } : { priority: {}, skip_superseded: { WalletBalanceChanged: false } };
  const world = await createWorld({
    ...PIPELINE,
    tencent_im: { request_timeout: '3s', rate_limit_per_second: 200, base_url: im.url },
    room_notice_worker: { enabled: true, poll_interval: '100ms', batch_size: 100, lock_ttl: '30s', max_retry_count: 10, gap_grace: '60s' },
    deliver: { ...PIPELINE.deliver, ...deliver },
    ...o.overrides,
  });
  try {
    await o.setup?.(world);
    await im.start(world.env.configFile);
    await im.setFaults({ delay_ms: o.imLatencyMs, rate_limit_per_second: 200, rate_limit_counts_rejected: true });
    for (let i = 0; i < 2; i++) await world.spawn('deliver');
    await world.spawn('ingest');
    await new Promise((r) => setTimeout(r, 1000));

    // Kicks all along, from just before the burst until every newest balance has arrived.
    const kickCommittedAt = new Map<string, number>();
    let kicking = true;
    const kicker = (async () => {
      for (let n = 1; kicking; n++) {
        const fact = { ...kick(n), created_at_ms: Date.now() };
        await insertRoomRows(world.env.owner, world.env.config.room_database, [fact]);
        kickCommittedAt.set(fact.event_id, Date.now());
        await new Promise((r) => setTimeout(r, o.kickEveryMs));
      }
    })();
    await new Promise((r) => setTimeout(r, 500));

    // The storm: every user's first change, then every user's second, … (as a combo lands), in one burst.
    const burstStart = Date.now();
    for (let v = 1; v <= o.versions; v++) {
      await insertWalletRows(
        world.env.owner,
        world.env.config.wallet_database,
        Array.from({ length: o.users }, (_, u) => stormRow(u, v, Date.now())),
      );
    }
    const burstEnd = Date.now();

    const newestReceived = async () => {
      const newest = (await im.delivered()).filter((m) => m.ext === 'wallet_notice' && JSON.parse(m.data).balance_version === o.versions);
      return newest;
    };
    const deadline = Date.now() + 300_000;
    let newest = await newestReceived();
    while (newest.length < o.users) {
      if (Date.now() > deadline) throw new Error(`overload: only ${newest.length}/${o.users} newest balances received`);
      await new Promise((r) => setTimeout(r, 250));
      newest = await newestReceived();
    }
    kicking = false;
    await kicker;
    // Every kick still arrives.
    while ((await im.delivered()).filter((m) => m.ext === 'room_notice').length < kickCommittedAt.size) {
      if (Date.now() > deadline) throw new Error('overload: kicks missing');
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 500));
    const messages = await im.delivered();
    const stats = await im.stats();
    const kickLatencies = messages
      .filter((m) => m.ext === 'room_notice')
      .map((m) => m.receivedAtMs - kickCommittedAt.get(JSON.parse(m.data).event_id)!)
      .sort((a, b) => a - b);
    const stormKicks = messages.filter((m) => m.ext === 'room_notice' && kickCommittedAt.get(JSON.parse(m.data).event_id)! >= burstStart);
    const lastNewest = Math.max(...newest.map((m) => m.receivedAtMs));
    const events = o.users * o.versions + kickCommittedAt.size;
    const [ledger] = await world.env.notice.query<any[]>('SELECT status, COUNT(*) AS n FROM notice_delivery_events GROUP BY status');
    return {
      variant: o.shipped ? 'priorities + skip superseded' : 'FIFO, every balance sent',
      storm_events: o.users * o.versions,
      kicks: kickCommittedAt.size,
      kicks_during_storm: stormKicks.length,
      kick_p50_ms: percentile(kickLatencies, 50),
      kick_p99_ms: percentile(kickLatencies, 99),
      kick_max_ms: kickLatencies[kickLatencies.length - 1]!,
      newest_balance_after_burst_s: Math.round((lastNewest - burstEnd) / 100) / 10,
      burst_ms: burstEnd - burstStart,
      requests: stats.requests,
      requests_share_of_events: Math.round((stats.requests / events) * 1000) / 10,
      over_frequency_answers: stats.by_code['60007'] ?? 0,
      ledger: Object.fromEntries(ledger.map((r) => [r.status, Number(r.n)])),
    };
  } finally {
    await world.close();
    await im.stop();
  }
}
