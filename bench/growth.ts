import { createWorld } from './world.ts';
import { channelQueueSpecs } from '../src/channels/channel-set.ts';
import { channelRoutes } from '../src/channels/routing.ts';
import { median } from './proc-stats.ts';
import { createLogger } from '../src/platform/logger.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { GapWatchStore } from '../src/outbox/gap-watch-store.ts';
import { CursorStore } from '../src/outbox/cursor-store.ts';
import { OutboxPoller } from '../src/outbox/poller.ts';
import { OutboxReader } from '../src/outbox/reader.ts';
import { FactRecorder } from '../src/intake/fact-recorder.ts';
import { walletOutboxSource } from '../src/notices/wallet/source.ts';
import { Reconciler } from '../src/delivery/reconciler.ts';
import { createRedis } from '../src/platform/redis.ts';
import { createDeliverQueues, enqueueDeliveries } from '../queues/deliver-queue.ts';

const ITERATIONS = 40;
const PAYLOAD =
  '{"transaction_id":"t","command_id":"c","asset_type":"COIN","available_delta":-100,"frozen_delta":0,"available_after":1000,"frozen_after":0,"balance_version":1,"metadata":{}}';

/** Time of one poll (idle, and reading a batch) and one reconciler pass, with the outbox and ledger at each size. */
export async function runGrowth(sizes: number[], log: (s: string) => void) {
  const points = [];
  for (const rows of sizes) {
    const world = await createWorld({
      wallet_notice_worker: { enabled: true, batch_size: 100, lock_ttl: '30s' },
      reconciler: { interval: '60s', pending_grace: '1s', batch_size: 500 },
    });
    const { env } = world;
    const logger = createLogger('silent');
    const redis = createRedis(env.config.redis.url, 'producer');
    const queues = createDeliverQueues(redis, env.config.redis.prefix, channelQueueSpecs(env.config));
    try {
      log(`growth: filling outbox and ledger with ${rows} rows`);
      const wallet = env.config.wallet_database;
      const notice = env.config.mysql.url.split('/').pop()!;
      for (let from = 0; from < rows; from += 500_000) {
        const to = Math.min(rows, from + 500_000);
        await env.owner.query(
          `INSERT INTO \`${wallet}\`.wallet_outbox (app_code, event_id, event_type, user_id, payload, created_at_ms) SELECT 'lalu', CONCAT('g', seq), 'WalletBalanceChanged', CONCAT('', 10000 + seq % 50), ?, 1700000000000 + seq FROM \`${wallet}\`.seq_${from + 1}_to_${to}`,
          [PAYLOAD],
        );
        // The ledger mirrors it: delivered rows, recent enough that retention keeps them.
        await env.owner.query(
          `INSERT INTO \`${notice}\`.notice_delivery_events (source_name, app_code, source_event_id, channel, event_type, user_id, status, notice_kind, attempt_count, claim_count, payload, provider_ref, source_row_id, source_created_at_ms, created_at_ms, updated_at_ms, delivered_at_ms)
           SELECT 'wallet_outbox', 'lalu', CONCAT('g', seq), 'tencent_im_c2c', 'WalletBalanceChanged', CONCAT('', 10000 + seq % 50), 'delivered', 'wallet_notice', 1, 1, ?, CONCAT('k', seq), seq, 1700000000000 + seq, ?, ?, ?
             FROM \`${wallet}\`.seq_${from + 1}_to_${to}`,
          [PAYLOAD, Date.now(), Date.now(), Date.now()],
        );
      }
      // 100 stranded rows for the reconciler to find on every pass (a pass restarts their clock: strand them again).
      const strand = () =>
        env.notice.query(
          `UPDATE notice_delivery_events SET status = 'pending', updated_at_ms = 1 WHERE source_event_id IN (${Array.from({ length: 100 }, (_, i) => `'g${rows - i}'`).join(',')})`,
        );
      await strand();
      await env.notice.query('ANALYZE TABLE notice_delivery_events');
      await settle(env.owner);

      // Bulk INSERT … SELECT reserves auto-increment ids in blocks, so ids have holes between chunks: use the real top.
      const [top] = await env.owner.query<any[]>(`SELECT MAX(id) AS max_id FROM \`${wallet}\`.wallet_outbox`);
      const maxId = Number(top[0].max_id);
      const source = walletOutboxSource(wallet);
      const ledger = new LedgerRepository(env.notice);
      const cursors = new CursorStore(env.notice);
      const recorder = new FactRecorder(
        ledger,
        (items) =>
          enqueueDeliveries(
            queues,
            items.map((i) => ({ ...i, maxRetryCount: 10 })),
          ),
        channelRoutes(env.config),
        logger,
      );
      const newPoller = () =>
        new OutboxPoller({
          source,
          config: env.config.wallet_notice_worker,
          reader: new OutboxReader(env.notice, source),
          cursors,
          gapWatch: new GapWatchStore(env.notice),
          recorder,
          owner: 'bench',
          logger,
        });

      const batch: number[] = [];
      for (let i = 0; i < ITERATIONS; i++) {
        await env.notice.query(
          "REPLACE INTO notice_ingest_cursors (source_name, high_water_id, open_gaps, lease_owner, lease_until_ms, updated_at_ms) VALUES ('wallet_outbox', ?, '[]', NULL, 0, 0)",
          [maxId - 100],
        );
        const poller = newPoller();
        const t0 = performance.now();
        await poller.pollOnce();
        batch.push(performance.now() - t0);
      }
      const idlePoller = newPoller();
      while ((await idlePoller.pollOnce()).full); // takes the lease and reads up to the top
      const idle: number[] = [];
      for (let i = 0; i < ITERATIONS; i++) {
        const t0 = performance.now();
        await idlePoller.pollOnce();
        idle.push(performance.now() - t0);
      }
      const reconciler = new Reconciler({ ledger, queues, redis, config: env.config, owner: 'bench', maxRetryFor: () => 10, logger });
      const passes: number[] = [];
      for (let i = 0; i < ITERATIONS; i++) {
        await strand();
        const t0 = performance.now();
        await reconciler.runOnce();
        passes.push(performance.now() - t0);
      }
      points.push({ rows, idle_poll_ms: round(median(idle)), batch_poll_ms: round(median(batch)), reconciler_pass_ms: round(median(passes)) });
    } finally {
      await queues.close();
      redis.disconnect();
      await world.close();
    }
  }
  const first = points[0]!;
  const last = points[points.length - 1]!;
  return {
    points,
    ratios: {
      idle_poll: round(last.idle_poll_ms / first.idle_poll_ms),
      batch_poll: round(last.batch_poll_ms / first.batch_poll_ms),
      reconciler_pass: round(last.reconciler_pass_ms / first.reconciler_pass_ms),
    },
  };
}

/**
 * A bulk load leaves InnoDB flushing and purging for a while; timing a 1 ms query meanwhile measures that
 * background work, not the query. Wait (up to 60 s) until dirty pages and the purge backlog are small.
 */
async function settle(pool: import('mysql2/promise').Pool): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const [rows] = await pool.query<any[]>("SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_pages_dirty', 'Innodb_history_list_length')");
    const values = Object.fromEntries(rows.map((r) => [r.Variable_name, Number(r.Value)]));
    if ((values.Innodb_buffer_pool_pages_dirty ?? 0) < 200 && (values.Innodb_history_list_length ?? 0) < 1000) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
