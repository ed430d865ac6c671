import type { Pool, RowDataPacket } from 'mysql2/promise';
import type { Logger } from 'pino';
import { queuedJobs, type DeliverQueues } from '../queues/deliver-queue.ts';
import { describeError } from '../src/platform/errors.ts';

export interface PipelineSample {
  atMs: number;
  /** Jobs waiting, delayed or prioritised per channel (all its queues). */
  queued: Record<string, number>;
  /** Age of the oldest pending ledger row (ms), or null when none is pending. */
  oldestPendingMs: number | null;
}

/**
 * Samples what the charts show over time that the ledger does not keep — queue depth per channel and the oldest
 * pending row's age — every `everyMs` into a ring of the last `keepMs`, kept in Redis too (a sorted set by time under
 * the deployment's prefix), so a restarted dashboard draws the hours before its start (issue 47 §2).
 */
export class PipelineSampler {
  readonly samples: PipelineSample[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly pool: Pool,
    private readonly queues: DeliverQueues,
    private readonly logger: Logger,
    private readonly everyMs = 30_000,
    private readonly keepMs = 6 * 3_600_000,
    /** Where the samples outlive the process: `<prefix>:dashboard:samples`; none keeps them in memory only. */
    private readonly storeKey: string | null = null,
  ) {}

  /** The samples of the last `keepMs` that an earlier run (or another dashboard) stored, before the first new one. */
  async restore(nowMs = Date.now()): Promise<void> {
    if (!this.storeKey) return;
    const stored = await this.queues.connection.zrangebyscore(this.storeKey, nowMs - this.keepMs, '+inf');
    const earlier = stored.map((text) => JSON.parse(text) as PipelineSample).filter((s) => !this.samples.some((mine) => mine.atMs === s.atMs));
    this.samples.unshift(...earlier);
    this.samples.sort((a, b) => a.atMs - b.atMs);
  }

  start(): void {
    const tick = () => {
      void this.sample()
        .catch((err) => this.logger.warn({ err: describeError(err) }, 'dashboard chart sample failed; the next one tries again'))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, this.everyMs);
        });
    };
    this.timer = setTimeout(() => {
      void this.restore()
        .catch((err) => this.logger.warn({ err: describeError(err) }, 'earlier chart samples not read from Redis; the charts start now'))
        .finally(tick);
    }, 0);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  async sample(nowMs = Date.now()): Promise<PipelineSample> {
    const queued: Record<string, number> = {};
    for (const channel of this.queues.channelNames) {
      const counts = await Promise.all(this.queues.ofChannel(channel).map((q) => queuedJobs(q)));
      queued[channel] = counts.reduce((a, b) => a + b, 0);
    }
    const [pending] = await this.pool.query<RowDataPacket[]>(
      "SELECT updated_at_ms FROM notice_delivery_events FORCE INDEX (idx_nde_status_updated) WHERE status = 'pending' ORDER BY updated_at_ms LIMIT 1",
    );
    const sample = { atMs: nowMs, queued, oldestPendingMs: pending[0] ? Math.max(0, nowMs - Number(pending[0].updated_at_ms)) : null };
    this.samples.push(sample);
    while (this.samples.length > 0 && this.samples[0]!.atMs < nowMs - this.keepMs) this.samples.shift();
    if (this.storeKey)
      await this.queues.connection
        .multi()
        .zadd(this.storeKey, nowMs, JSON.stringify(sample))
        .zremrangebyscore(this.storeKey, '-inf', nowMs - this.keepMs)
        .pexpire(this.storeKey, this.keepMs)
        .exec();
    return sample;
  }
}
