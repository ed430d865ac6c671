import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';

/**
 * What a deterministic job id stands for in Redis after a partial loss (a failover to a lagging replica, an
 * eviction, a careless cleanup). Checked against BullMQ 6.7.0 (see shared/reference/bullmq-recovery.md):
 * - `live`: in wait/active/delayed/prioritized. A live id whose hash is gone (a ghost) still runs, as an empty job
 *   the processor drops; it then ends completed and is repaired like `finished`.
 * - `finished`: in completed/failed. Its hash would swallow a re-add, so it is removed first.
 * - `orphan`: a hash in no state. `getJobState` says `unknown` and an add under the same id is silently dropped,
 *   so it must be removed too — unless it holds a lock, which means a worker may still be running it.
 * - `absent`: nothing under the id; an add simply works.
 */
export type JobPresence = 'live' | 'finished' | 'orphan' | 'absent';

const LIVE_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

/** The presence of each id, in two round trips at most (states for all, hash existence for the `unknown` ones). */
export async function inspectJobs(queue: Queue, redis: Redis, ids: readonly string[]): Promise<JobPresence[]> {
  // Issued together, so the commands share one round trip on the connection.
  const states = await Promise.all(ids.map((id) => queue.getJobState(id)));
  const unknown = ids.filter((_, i) => states[i] === 'unknown');
  // BullMQ has no "does this hash exist" call: EXISTS on its own key name (QueueBase.toKey) is the one raw read.
  const exists = new Map(await Promise.all(unknown.map(async (id) => [id, (await redis.exists(queue.toKey(id))) === 1] as const)));
  return ids.map((id, i) => {
    const state = states[i]!;
    if (LIVE_STATES.has(state)) return 'live';
    if (state === 'completed' || state === 'failed') return 'finished';
    return exists.get(id) ? 'orphan' : 'absent';
  });
}

/**
 * Clears finished jobs and orphans so that an add under the same id is not swallowed. `queue.remove` refuses a job
 * whose lock is held (answers 0): such an id is reported as `locked` and left for a later pass.
 */
export async function clearForReadd(queue: Queue, ids: readonly string[]): Promise<{ locked: Set<string> }> {
  const answers = await Promise.all(ids.map((id) => queue.remove(id, { removeChildren: false }).catch(() => 0)));
  return { locked: new Set(ids.filter((_, i) => answers[i] !== 1)) };
}

/** Ids among these that are not live after an add: BullMQ dropped the add (a hash appeared meanwhile). */
export async function notLive(queue: Queue, redis: Redis, ids: readonly string[]): Promise<string[]> {
  const presence = await inspectJobs(queue, redis, ids);
  return ids.filter((_, i) => presence[i] !== 'live');
}
