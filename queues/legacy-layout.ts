import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DeliverJobData, DeliverQueues } from './deliver-queue.ts';

/** Job states a move takes over: everything not being worked or finished. */
const MOVABLE = ['waiting', 'prioritized', 'delayed'] as const;
const LIVE = [...MOVABLE, 'active', 'waiting-children'] as const;
const PAGE = 500;

export interface LegacyPass {
  /** Jobs re-added under the app's own tag and removed from the old queue. */
  moved: number;
  /** Jobs left where they were: being worked by a process of the previous release, or taken meanwhile. */
  left: number;
  /** Old queues found empty and removed. */
  removed: number;
}

/**
 * The upgrade from the single-tag layout, where every app's queues sat under the deployment's prefix (`{notice}`),
 * to one tag per app (`{notice:lalu}`, src/config/redis-keyspace.ts). A pass moves each waiting, delayed or
 * prioritized job of an old queue to the same queue under the new tag (same id, data, priority and remaining delay)
 * and removes an old queue once nothing in it is live. A job being worked by a process of the previous release is
 * left to finish; if that process dies, its row's lock expires and the reconciler gives it a job in the new layout.
 * A job moved while an old process takes it runs at most twice, and the ledger's claim sends it once.
 */
export class LegacyQueueLayout {
  private readonly pairs: Array<{ old: Queue<DeliverJobData>; current: Queue<DeliverJobData> }>;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    queues: DeliverQueues,
    /** Connection errors of the old-layout queues (BullMQ prints an unheard one to stderr with its stack). */
    onError: (err: Error) => void,
  ) {
    this.pairs = queues.all
      .filter((queue) => queue.opts.prefix !== prefix)
      .map((current) => ({ old: new Queue<DeliverJobData>(current.name, { connection: redis, prefix }), current }));
    for (const { old } of this.pairs) old.on('error', onError);
  }

  /** One pass over every old queue; cheap (one EXISTS per queue) once the old layout is gone. */
  async pass(now = Date.now()): Promise<LegacyPass> {
    const result: LegacyPass = { moved: 0, left: 0, removed: 0 };
    for (const { old, current } of this.pairs) {
      if ((await this.redis.exists(old.toKey('meta'), old.toKey('id'), old.toKey('wait'), old.toKey('delayed'))) === 0) continue;
      for (;;) {
        const jobs = await old.getJobs([...MOVABLE], 0, PAGE - 1, true);
        if (jobs.length === 0) break;
        let movedThisPage = 0;
        for (const job of jobs) {
          if (!job.id) continue;
          const remaining = Math.max(0, job.timestamp + (job.opts.delay ?? 0) - now);
          await current.add(job.name, job.data, { ...job.opts, jobId: job.id, delay: remaining, timestamp: undefined });
          try {
            await job.remove();
            movedThisPage++;
          } catch {
            // Taken by a worker of the previous release meanwhile: it finishes there (the ledger sends once).
            result.left++;
          }
        }
        result.moved += movedThisPage;
        if (movedThisPage === 0) break;
      }
      // An add by a process of the previous release between this count and the removal is lost from Redis only:
      // its row stays pending in the ledger, and the reconciler gives it a job once its grace has passed.
      const live = await old.getJobCountByTypes(...LIVE);
      if (live === 0) {
        await old.obliterate({ force: true });
        result.removed++;
      }
    }
    return result;
  }

  async close(): Promise<void> {
    await Promise.all(this.pairs.map(({ old }) => old.close()));
  }
}
