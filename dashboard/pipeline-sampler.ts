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
 * pending row's age — every `everyMs` into a ring of the last `keepMs`. In memory: a restarted dashboard starts a new
 * picture (the per-minute outcomes come from the ledger and survive).
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
  ) {}

  start(): void {
    const tick = () => {
      void this.sample()
        .catch((err) => this.logger.warn({ err: describeError(err) }, 'dashboard chart sample failed; the next one tries again'))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, this.everyMs);
        });
    };
    this.timer = setTimeout(tick, 0);
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
    return sample;
  }
}
