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
