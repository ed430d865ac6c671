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

/**
 * Two modules answering to one name would be composed silently (the later config block parsed twice, rows routed to
 * either): refused at start-up, naming both. Checked: channel names, source keys and source names (the ledger's
 * source_name), MQ subscription keys, and every top-level config key a module adds, against each other and the core.
 */
export function duplicateModuleProblems(modules: ModuleSet, coreKeys: readonly string[], coreAppKeys: readonly string[] = []): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  const claim = (what: string, value: string, by: string) => {
    const key = `${what}\u0000${value}`;
    const first = seen.get(key);
    if (first) problems.push(`${what} "${value}" is claimed twice: by ${first} and by ${by}`);
    else seen.set(key, by);
  };
  for (const key of coreKeys) claim('config key', key, 'the core config');
  for (const key of coreAppKeys) claim('app key', key, 'the core config');
  modules.channels.forEach((c, i) => {
    const by = `channel module "${c.name}" (channels[${i}])`;
    claim('channel name', c.name, by);
    for (const key of Object.keys(c.configShape)) claim('config key', key, by);
    for (const key of Object.keys(c.appShape ?? {})) claim('app key', key, by);
  });
  modules.sources.forEach((s, i) => {
    const by = `source module "${s.key}" (sources[${i}])`;
    claim('source key', s.key, by);
    claim('source name', s.sourceName, by);
    for (const key of Object.keys(s.configShape)) claim('config key', key, by);
    for (const key of Object.keys(s.mqShape ?? {})) claim('rocketmq key', key, by);
  });
  return problems;
}
