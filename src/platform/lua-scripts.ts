import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';

/** A Lua script read from its file once: `verbNoun-N.lua`, N its number of keys (BullMQ's convention). */
export interface LuaScript {
  name: string;
  numberOfKeys: number;
  lua: string;
}

/**
 * Reads `<dir>/<name>.lua` once. `--- @include "other"` lines are replaced by `<dir>/other.lua`, and `{{NAME}}`
 * by `values.NAME` (constants the TypeScript side owns too); a placeholder left unfilled is an error at load.
 */
export function loadLuaScript(dir: URL, name: string, values: Record<string, string | number> = {}): LuaScript {
  const keys = /-(\d+)$/.exec(name);
  if (!keys) throw new Error(`Lua script ${name}: its name must end in -<number of keys>`);
  const read = (file: string) => readFileSync(new URL(`${file}.lua`, dir), 'utf8');
  const lua = read(name)
    .replace(/^--- @include "([A-Za-z0-9_-]+)"$/gm, (_line, included: string) => read(included))
    .replace(/\{\{([A-Z0-9_]+)\}\}/g, (_m, key: string) => {
      if (!(key in values)) throw new Error(`Lua script ${name}: no value for {{${key}}}`);
      return String(values[key]);
    });
  return { name, numberOfKeys: Number(keys[1]), lua };
}

const defined = new WeakMap<object, Set<string>>();

/**
 * Runs a script through ioredis' defineCommand (EVALSHA, falling back to EVAL once after a script flush or on a
 * new node), defining it on the connection the first time.
 */
export async function runLuaScript(redis: Redis | Cluster, script: LuaScript, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
  let names = defined.get(redis);
  if (!names) defined.set(redis, (names = new Set()));
  const command = `notice_${script.name.replace(/-/g, '_')}`;
  if (!names.has(command)) {
    redis.defineCommand(command, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    names.add(command);
  }
  if (keys.length !== script.numberOfKeys) throw new Error(`Lua script ${script.name} takes ${script.numberOfKeys} keys, got ${keys.length}`);
  return (redis as unknown as Record<string, (...a: Array<string | number>) => Promise<unknown>>)[command]!(...keys, ...args);
}
