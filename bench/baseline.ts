import { tencentApps } from '../src/tencent-im/apps.ts';
import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { TencentImClient } from '../src/tencent-im/client.ts';
import { UserSigCache } from '../src/tencent-im/usersig.ts';
import type { NoticeConfig } from '../src/config/schema.ts';

/**
 * The seed's shape, as a reference inside the bench: one loop that every poll_interval claims up to batch_size
 * rows with an UPDATE, sends them one by one, and marks each row. It reads the same wallet_outbox through its own
 * claim table (the seed claims the owner's rows; we may not write those).
 */
export async function runBaseline(
  pool: Pool,
  config: NoticeConfig,
  options: { pollIntervalMs: number; batchSize: number; durationMs: number },
): Promise<{ delivered: number; elapsedMs: number }> {
  const db = config.wallet_database;
  await pool.query(
    `CREATE TABLE IF NOT EXISTS \`${db}\`.baseline_claims (id BIGINT UNSIGNED PRIMARY KEY, status VARCHAR(16) NOT NULL, locked_by VARCHAR(64), lock_until_ms BIGINT, KEY (status, id))`,
  );
  const im = config.tencent_im;
  const app = [...tencentApps(config).values()][0]!;
  const client = new TencentImClient(
    {
      baseUrl: im.base_url,
      sdkAppId: app.sdkAppId,
      adminIdentifier: im.admin_identifier,
      requestTimeoutMs: im.request_timeout,
      msgLifeTimeMs: im.msg_lifetime,
      maxSockets: 1,
    },
    new UserSigCache(app.sdkAppId, app.secretKey, im.admin_identifier, im.usersig_ttl),
  );
  const started = Date.now();
  let delivered = 0;
  try {
    while (Date.now() - started < options.durationMs) {
      const loopStart = Date.now();
      // New outbox rows become claimable rows, then one UPDATE claims a batch.
      await pool.query(
        `INSERT IGNORE INTO \`${db}\`.baseline_claims (id, status) SELECT id, 'pending' FROM \`${db}\`.wallet_outbox WHERE id > (SELECT COALESCE(MAX(id), 0) FROM \`${db}\`.baseline_claims)`,
      );
      const [claim] = await pool.query<ResultSetHeader>(
        `UPDATE \`${db}\`.baseline_claims SET status = 'delivering', locked_by = 'baseline', lock_until_ms = ? WHERE status = 'pending' ORDER BY id LIMIT ?`,
        [Date.now() + 30_000, options.batchSize],
      );
      if (claim.affectedRows > 0) {
        const [rows] = await pool.query<RowDataPacket[]>(
          `SELECT o.id, o.event_id, o.user_id, o.payload FROM \`${db}\`.baseline_claims c JOIN \`${db}\`.wallet_outbox o ON o.id = c.id WHERE c.status = 'delivering' AND c.locked_by = 'baseline' ORDER BY c.id`,
        );
        for (const row of rows) {
          const outcome = await client.sendC2C({
            toAccount: row.user_id,
            ext: 'wallet_notice',
            data: JSON.stringify({ event_id: row.event_id, payload: String(row.payload) }),
            dedupSeed: `baseline/${row.event_id}`,
          });
          await pool.query(`UPDATE \`${db}\`.baseline_claims SET status = ? WHERE id = ?`, [outcome.kind === 'delivered' ? 'delivered' : 'retryable', row.id]);
          if (outcome.kind === 'delivered') delivered++;
          if (Date.now() - started >= options.durationMs) break;
        }
      }
      const wait = options.pollIntervalMs - (Date.now() - loopStart);
      // The seed ticks every poll_interval; a tick that ran long starts the next one at once.
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  } finally {
    client.close();
  }
  return { delivered, elapsedMs: Date.now() - started };
}
