import { createWorld } from './world.ts';
import { channelQueueSpecs } from '../src/channels/channel-set.ts';
import { channelRoutes } from '../src/channels/routing.ts';
import { median } from './proc-stats.ts';
import { createLogger } from '../src/platform/logger.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { CursorStore } from '../src/outbox/cursor-store.ts';
import { GapWatchStore } from '../src/outbox/gap-watch-store.ts';
import { OutboxPoller } from '../src/outbox/poller.ts';
import { OutboxReader } from '../src/outbox/reader.ts';
import { serializeGaps, type GapRange } from '../src/outbox/gap-tracker.ts';
import { FactRecorder } from '../src/intake/fact-recorder.ts';
import { walletOutboxSource } from '../src/notices/wallet/source.ts';
import { createRedis } from '../src/platform/redis.ts';
import { createDeliverQueues, enqueueDeliveries } from '../queues/deliver-queue.ts';

const ITERATIONS = 40;
const BATCH = 100;
const PAYLOAD =
  '{"transaction_id":"t","command_id":"c","asset_type":"COIN","available_delta":-100,"frozen_delta":0,"available_after":1000,"frozen_after":0,"balance_version":1,"metadata":{}}';

interface Costs {
  step: number;
  /** Caught up, every hole past gap_grace (in the late-commit watch): the steady state of a quiet source. */
  idle_poll_ms: number;
  /** Caught up, with the last 1,000 rows' holes still inside gap_grace: the first minute after a burst. */
  idle_poll_open_gaps_ms: number;
  /** 100 new rows read, recorded and the cursor saved, with the holes of the 1,000 rows below still open. */
  batch_poll_ms: number;
  open_gap_ranges: number;
}

/**
 * An outbox whose ids step by `step` (a writer with auto_increment_increment = step, e.g. Group Replication's 7):
 * every row leaves a hole of step − 1 ids that never fills. Measures a poll's cost against the dense case.
 */
async function measure(rows: number, step: number): Promise<Costs> {
  const world = await createWorld({ wallet_notice_worker: { enabled: true, batch_size: BATCH, lock_ttl: '30s', gap_grace: '60s' } });
  const { env } = world;
  const logger = createLogger('silent');
  const redis = createRedis(env.config.redis.url, 'producer');
  const queues = createDeliverQueues(redis, env.config.redis.prefix, channelQueueSpecs(env.config));
  try {
    const wallet = env.config.wallet_database;
    const notice = env.config.mysql.url.split('/').pop()!;
    await env.owner.query(
      `INSERT INTO \`${wallet}\`.wallet_outbox (id, app_code, event_id, event_type, user_id, payload, created_at_ms)
       SELECT seq * ?, 'lalu', CONCAT('s', seq), 'WalletBalanceChanged', CONCAT('', 10000 + seq % 50), ?, 1700000000000 + seq FROM \`${wallet}\`.seq_1_to_${rows}`,
      [step, PAYLOAD],
    );
    await env.owner.query(
      `INSERT INTO \`${notice}\`.notice_delivery_events (source_name, app_code, source_event_id, channel, event_type, user_id, status, notice_kind, attempt_count, claim_count, payload, provider_ref, source_row_id, source_created_at_ms, created_at_ms, updated_at_ms, delivered_at_ms)
       SELECT 'wallet_outbox', 'lalu', CONCAT('s', seq), 'tencent_im_c2c', 'WalletBalanceChanged', CONCAT('', 10000 + seq % 50), 'delivered', 'wallet_notice', 1, 1, ?, CONCAT('k', seq), seq * ?, 1700000000000 + seq, ?, ?, ?
         FROM \`${wallet}\`.seq_1_to_${rows}`,
      [PAYLOAD, step, Date.now(), Date.now(), Date.now()],
    );
    await env.notice.query('ANALYZE TABLE notice_delivery_events');
    const maxId = rows * step;
    const source = walletOutboxSource(wallet);
    const cursors = new CursorStore(env.notice);
    const gapWatch = new GapWatchStore(env.notice);
    const recorder = new FactRecorder(
      new LedgerRepository(env.notice),
      (items) =>
        enqueueDeliveries(
          queues,
          items.map((i) => ({ ...i, maxRetryCount: 10 })),
        ),
      channelRoutes(env.config),
      logger,
    );
    const poller = () =>
      new OutboxPoller({
        source,
        config: env.config.wallet_notice_worker,
        reader: new OutboxReader(env.notice, source),
        cursors,
        gapWatch,
        recorder,
        owner: 'bench',
        logger,
      });
    // The holes of the 1,000 rows below `top`, first seen just now (inside gap_grace).
    const holesBelow = (top: number): GapRange[] =>
      step === 1 ? [] : Array.from({ length: 1000 }, (_, i): GapRange => [top - (i + 1) * step + 1, top - i * step - 1, Date.now()]).reverse();
    const setCursor = (highWater: number, gaps: GapRange[]) =>
      env.notice.query(
        "REPLACE INTO notice_ingest_cursors (source_name, high_water_id, open_gaps, lease_owner, lease_until_ms, updated_at_ms) VALUES ('wallet_outbox', ?, ?, NULL, 0, 0)",
        [highWater, serializeGaps(gaps)],
      );

    const batch: number[] = [];
    const idleOpen: number[] = [];
    const idle: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const below = maxId - BATCH * step;
      await setCursor(below, holesBelow(below));
      const p = poller();
      const t0 = performance.now();
      await p.pollOnce();
      batch.push(performance.now() - t0);
    }
    await setCursor(maxId, holesBelow(maxId));
    const open = poller();
    await open.pollOnce(); // takes the lease
    for (let i = 0; i < ITERATIONS; i++) {
      const t0 = performance.now();
      await open.pollOnce();
      idleOpen.push(performance.now() - t0);
    }
    // The same holes past the grace: given up into the watch (not due again for a grace), then idle polls.
    const aged = holesBelow(maxId).map(([from, to]): GapRange => [from, to, Date.now() - 120_000]);
    await setCursor(maxId, aged);
    const quiet = poller();
    await quiet.pollOnce(); // takes the lease and gives the holes up
    for (let i = 0; i < ITERATIONS; i++) {
      const t0 = performance.now();
      await quiet.pollOnce();
      idle.push(performance.now() - t0);
    }
    return {
      step,
      idle_poll_ms: round(median(idle)),
      idle_poll_open_gaps_ms: round(median(idleOpen)),
      batch_poll_ms: round(median(batch)),
      open_gap_ranges: holesBelow(maxId).length,
    };
  } finally {
    await queues.close();
    redis.disconnect();
    await world.close();
  }
}

/** Dense (step 1) against step 7, same size, measured back to back. */
export async function runSparse(rows: number, log: (s: string) => void) {
  log(`sparse: ${rows} rows at step 1`);
  const dense = await measure(rows, 1);
  log(`sparse: ${rows} rows at step 7`);
  const sparse = await measure(rows, 7);
  return {
    rows,
    points: [dense, sparse],
    ratios: {
      idle_poll: round(sparse.idle_poll_ms / dense.idle_poll_ms),
      idle_poll_open_gaps: round(sparse.idle_poll_open_gaps_ms / dense.idle_poll_open_gaps_ms),
      batch_poll: round(sparse.batch_poll_ms / dense.batch_poll_ms),
    },
  };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
