import type { ChannelModule } from '../channels/types.ts';
import type { SourceModule } from '../notices/types.ts';

/** The channel and source modules a config was validated with. */
export interface ModuleSet {
  channels: readonly ChannelModule[];
  sources: readonly SourceModule[];
}

/** Where a parsed config keeps its modules: a symbol, so JSON, logs and zod never see it, and a spread keeps it. */
export const MODULES = Symbol('notice-service modules');

/** The modules this config was validated with (configSchemaFor); every process loops over these. */
export function modulesOf(config: object): ModuleSet {
  const set = (config as { [MODULES]?: ModuleSet })[MODULES];
  if (!set) throw new Error('this config was not parsed by configSchemaFor, so it names no modules');
  return set;
}

/** A module's own YAML block, as its schema parsed it (for modules whose keys the NoticeConfig type does not list). */
export function settingsOf<T>(config: object, key: string): T {
  return (config as Record<string, unknown>)[key] as T;
}
