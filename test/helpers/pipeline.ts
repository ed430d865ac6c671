import { createLogger } from '../../src/platform/logger.ts';
import { buildProcess, type NoticeProcess, type RoleName } from '../../src/cli/run-roles.ts';
import type { NoticeConfig } from '../../src/config/schema.ts';

/** The same process the CLI builds, in this test's process. */
export async function startPipeline(config: NoticeConfig, roles: RoleName[] = ['ingest', 'deliver']): Promise<NoticeProcess> {
  const proc = await buildProcess(config, roles, createLogger(config.log.level));
  await proc.start();
  return proc;
}
