import { createLogger } from '../../src/platform/logger.ts';
import { buildProcess, type NoticeProcess, type RoleName } from '../../cli/run-roles.ts';
import type { NoticeConfig } from '../../src/config/schema.ts';

/** The same process the CLI builds, in this test's process. */
export async function startPipeline(config: NoticeConfig, roles: RoleName[] = ['ingest', 'deliver']): Promise<NoticeProcess> {
  const proc = await buildProcess(config, roles, createLogger(config.log.level));
  await proc.start();
  return proc;
}

/** Jobs in any state across every deliver queue of the process, to show that something did (or did not) add one. */
export async function jobCounts(proc: NoticeProcess): Promise<number> {
  const counts = await Promise.all(proc.queues.all.map((q) => q.getJobCountByTypes('wait', 'delayed', 'prioritized', 'completed', 'failed', 'active')));
  return counts.reduce((a, b) => a + b, 0);
}

/** Jobs still moving (waiting, delayed, active) and failed, over every queue: a test comparing job counts waits for moving 0. */
export async function queueActivity(proc: NoticeProcess): Promise<{ moving: number; failed: number }> {
  const counts = await Promise.all(proc.queues.all.map((q) => q.getJobCounts('wait', 'delayed', 'prioritized', 'active', 'failed')));
  const sum = (state: string) => counts.reduce((n, c) => n + (c[state] ?? 0), 0);
  return { moving: sum('wait') + sum('delayed') + sum('prioritized') + sum('active'), failed: sum('failed') };
}
