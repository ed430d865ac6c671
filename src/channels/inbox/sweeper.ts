import type { Logger } from 'pino';
import type { InboxConfig } from './config.ts';
import type { NoticeMetrics } from '../../observability/metrics.ts';
import { describeError } from '../../platform/errors.ts';
import type { InboxOwner, InboxStore } from './store.ts';

/** Users checked against the cap per sweep; the rest wait for the next one. */
const MAX_USERS_PER_SWEEP = 5000;

/**
 * Keeps the inbox bounded: items past their kind's retention (a bounded DELETE by expire_at_ms, repeated within the
 * sweep's time budget) and each user's items beyond max_items_per_user. Only users this process wrote to since the
 * last sweep can have grown past the cap, so only they are checked: every process sweeps its own writes, and a
 * process that dies before its sweep leaves those users over the cap until their next item.
 */
export class InboxSweeper {
  private pending = new Map<string, InboxOwner>();

  constructor(
    private readonly store: InboxStore,
    private readonly config: InboxConfig,
    private readonly logger: Logger,
    private readonly metrics?: NoticeMetrics,
  ) {}

  touched(owner: InboxOwner): void {
    this.pending.set(`${owner.appCode}\u0000${owner.userId}`, { appCode: owner.appCode, userId: owner.userId });
  }

  async sweep(nowMs: number): Promise<Record<string, number>> {
    const budgetEnds = performance.now() + this.config.sweep_interval / 2;
    const batch = this.config.sweep_batch_size;
    let expired = 0;
    let capped = 0;
    try {
      for (;;) {
        const n = await this.store.deleteExpired(nowMs, batch);
        expired += n;
        if (n < batch || performance.now() > budgetEnds) break;
      }
      const owners = [...this.pending.entries()].slice(0, MAX_USERS_PER_SWEEP);
      for (const [id, owner] of owners) {
        for (;;) {
          const n = await this.store.deleteBeyondCap(owner, this.config.max_items_per_user, batch);
          capped += n;
          if (n < batch) break;
        }
        // Only once its cap is enforced: a failed sweep keeps the user for the next one.
        this.pending.delete(id);
        if (performance.now() > budgetEnds) break;
      }
    } catch (err) {
      this.logger.warn({ err: describeError(err) }, 'inbox sweep failed; the next one continues');
    }
    if (expired > 0) this.metrics?.inboxSwept.inc({ reason: 'retention' }, expired);
    if (capped > 0) this.metrics?.inboxSwept.inc({ reason: 'cap' }, capped);
    return { expired, capped };
  }
}
