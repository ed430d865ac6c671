import { z } from 'zod';
import { CHANNEL_MODULES } from '../channels/registry.ts';
import { SOURCE_MODULES } from '../notices/registry.ts';
import { coreShape, rocketmqShape, type NoticeConfig } from '../config/schema.ts';
import { duplicateModuleProblems, MODULES, type ModuleSet } from '../modules/module-set.ts';

/**
 * The config schema for a set of modules: the core keys, each channel's block and each source's keys. The parsed
 * config remembers its modules (modulesOf), so every process loops over exactly the modules it was validated with.
 * This folder is the composition root: the only place that imports both registries.
 */
export function configSchemaFor(modules: ModuleSet): z.ZodType<NoticeConfig, unknown> {
  const duplicates = duplicateModuleProblems(modules, [...Object.keys(coreShape), 'rocketmq']);
  if (duplicates.length > 0) throw new Error(`notice-service modules: ${duplicates.join('; ')}`);
  const mqShape: z.ZodRawShape = Object.assign({}, ...modules.sources.map((s) => s.mqShape ?? {}));
  const rocketmq = z.strictObject({ ...rocketmqShape, ...mqShape });
  const shape: z.ZodRawShape = {
    ...coreShape,
    ...Object.assign({}, ...modules.channels.map((c) => c.configShape)),
    ...Object.assign({}, ...modules.sources.map((s) => s.configShape)),
    rocketmq: rocketmq.default(() => rocketmq.parse({})),
  };
  const set: ModuleSet = { channels: modules.channels, sources: modules.sources };
  return z.strictObject(shape).transform((config) => Object.assign(config, { [MODULES]: set }) as unknown as NoticeConfig);
}

/** The registries' modules: channels/registry.ts and notices/registry.ts. */
export const REGISTERED_MODULES: ModuleSet = { channels: CHANNEL_MODULES, sources: SOURCE_MODULES };

/** The config of the modules in channels/registry.ts and notices/registry.ts. */
export const configSchema = configSchemaFor(REGISTERED_MODULES);
