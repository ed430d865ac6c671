import { z } from 'zod';
import { CHANNEL_MODULES } from '../channels/registry.ts';
import { SOURCE_MODULES } from '../notices/registry.ts';
import { coreAppShape, coreShape, coreShapeFor, NO_KIND_DEFAULTS, rocketmqShape, type KindDefaults, type NoticeConfig } from '../config/schema.ts';
import { appCode } from '../config/primitives.ts';
import { duplicateModuleProblems, MODULES, type ModuleSet } from '../modules/module-set.ts';

/**
 * The config schema for a set of modules: the core keys, each channel's block and each source's keys. The parsed
 * config remembers its modules (modulesOf), so every process loops over exactly the modules it was validated with.
 * This folder is the composition root: the only place that imports both registries.
 */
export function configSchemaFor(modules: ModuleSet): z.ZodType<NoticeConfig, unknown> {
  const duplicates = duplicateModuleProblems(modules, [...Object.keys(coreShape), 'rocketmq', 'apps'], Object.keys(coreAppShape));
  if (duplicates.length > 0) throw new Error(`notice-service modules: ${duplicates.join('; ')}`);
  const mqShape: z.ZodRawShape = Object.assign({}, ...modules.sources.map((s) => s.mqShape ?? {}));
  const rocketmq = z.strictObject({ ...rocketmqShape, ...mqShape });
  const app = z.strictObject({ ...coreAppShape, ...Object.assign({}, ...modules.channels.map((c) => c.appShape ?? {})) });
  const shape: z.ZodRawShape = {
    ...coreShapeFor(kindDefaults(modules)),
    ...Object.assign({}, ...modules.channels.map((c) => c.configShape)),
    ...Object.assign({}, ...modules.sources.map((s) => s.configShape)),
    rocketmq: rocketmq.default(() => rocketmq.parse({})),
    apps: z.record(appCode, app).default(() => ({})),
  };
  const set: ModuleSet = { channels: modules.channels, sources: modules.sources };
  // Keys a module has moved (tencent_im.app_code → apps) are lifted into their new place before parsing; the loader
  // reports what the lift found wrong beside the schema's own problems (an issue raised here would hide those).
  const upgraded = z.preprocess((raw) => upgradeConfig(raw, set).config, z.strictObject(shape));
  return upgraded.transform((config) => Object.assign(config, { [MODULES]: set }) as unknown as NoticeConfig);
}

/** The registries' modules: channels/registry.ts and notices/registry.ts. */
export const REGISTERED_MODULES: ModuleSet = { channels: CHANNEL_MODULES, sources: SOURCE_MODULES };

/** The config of the modules in channels/registry.ts and notices/registry.ts. */
export const configSchema = configSchemaFor(REGISTERED_MODULES);

/**
 * A raw config with every key a module has moved lifted into its new place (a copy), the deprecation notes to show the
 * operator, and the problems (a key set in both places).
 */
export function upgradeConfig(
  raw: unknown,
  modules: ModuleSet,
): { config: unknown; deprecated: string[]; problems: Array<{ path: string[]; message: string }> } {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { config: raw, deprecated: [], problems: [] };
  const config = structuredClone(raw) as Record<string, unknown>;
  const deprecated: string[] = [];
  const problems: Array<{ path: string[]; message: string }> = [];
  for (const module of modules.channels) {
    const result = module.upgradeConfig?.(config);
    if (!result) continue;
    deprecated.push(...result.deprecated);
    problems.push(...result.problems);
  }
  return { config, deprecated, problems };
}

/** The sources' per-kind defaults, merged in registry order (a later source's value for one kind wins). */
export function kindDefaults(modules: ModuleSet): KindDefaults {
  const merged: KindDefaults = structuredClone(NO_KIND_DEFAULTS);
  for (const source of modules.sources) {
    const own = source.kindDefaults;
    if (!own) continue;
    Object.assign(merged.priority, own.priority);
    Object.assign(merged.expireAfter, own.expireAfter);
    Object.assign(merged.supersedable, own.supersedable);
    for (const kind of own.mandatoryKinds ?? []) if (!merged.mandatoryKinds.includes(kind)) merged.mandatoryKinds.push(kind);
  }
  return merged;
}
