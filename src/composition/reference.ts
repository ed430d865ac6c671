import ms from 'ms';
import { z } from 'zod';
import type { NoticeConfig } from '../config/schema.ts';
import { configSchemaFor } from './schema.ts';
import type { ModuleSet } from '../modules/module-set.ts';

type JsonSchema = {
  type?: string;
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  maxLength?: number;
  default?: unknown;
  maxItems?: number;
  format?: string;
  required?: string[];
};

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** The type of a key in words: a duration is what durationMs accepts (a number of ms or a string such as "500ms"). */
function typeOf(s: JsonSchema): string {
  if (s.anyOf) {
    const kinds = s.anyOf.map(typeOf);
    if (kinds.length === 2 && kinds[0]!.startsWith('integer') && kinds[1] === 'string') return 'duration ("500ms", "30s", "1h" or ms)';
    return kinds.join(' or ');
  }
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.type === 'array') return `list of ${s.items ? typeOf(s.items) : 'values'}${s.maxItems !== undefined ? ` (at most ${s.maxItems})` : ''}`;
  if (s.type === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object') return `map of ${typeOf(s.additionalProperties)}`;
  const limits = [
    s.minimum !== undefined && s.minimum > 0 ? `≥ ${s.minimum}` : s.exclusiveMinimum !== undefined ? `> ${s.exclusiveMinimum}` : '',
    s.maximum !== undefined && s.maximum < MAX_SAFE ? `≤ ${s.maximum}` : '',
    s.minLength ? 'not empty' : '',
    s.format === 'uri' ? 'URL' : '',
    s.pattern ? `matching \`${s.pattern}\`` : '',
  ].filter(Boolean);
  return `${s.type ?? 'any'}${limits.length ? ` (${limits.join(', ')})` : ''}`;
}

function shown(value: unknown): string {
  if (value === undefined) return '—';
  const text = JSON.stringify(value);
  return text.length > 60 ? '(see the schema)' : `\`${text}\``;
}

/** Rows for `path` and, for objects with fixed keys, for each key below it. */
function rows(path: string, s: JsonSchema, defaults: unknown, required: boolean, skip: ReadonlySet<string> = new Set()): string[] {
  if (skip.has(path)) return [];
  const props = s.type === 'object' && s.properties ? s.properties : s.anyOf?.find((a) => a.properties)?.properties;
  if (props) {
    const need = new Set(s.required ?? []);
    return Object.entries(props).flatMap(([key, child]) =>
      rows(`${path}.${key}`, child, (defaults as Record<string, unknown> | undefined)?.[key], need.has(key), skip),
    );
  }
  // A map whose entries have fixed keys (apps) lists them under a placeholder: `apps.<app_code>.redis_tag`.
  const entry = s.type === 'object' && typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined;
  if (entry?.properties) return rows(`${path}.<${path === 'apps' ? 'app_code' : 'name'}>`, entry, undefined, false, skip);
  const isDuration = typeOf(s).startsWith('duration');
  const value = defaults ?? s.default;
  const fallback = required ? '**required**' : isDuration && typeof value === 'number' ? `\`${value === 0 ? '0' : ms(value)}\`` : shown(value);
  return [`| \`${path}\` | ${typeOf(s).replace(/\|/g, '\\|')} | ${fallback.replace(/\|/g, '\\|')} |`];
}

/**
 * The configuration reference as Markdown, generated from the schema of these modules (so it cannot drift): each
 * top-level key under the module that owns it, every leaf with its type, limits and default.
 */
export function configReference(modules: ModuleSet): string {
  const schema = configSchemaFor(modules);
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const defaults = schema.parse({ mysql: { url: 'mysql://host/db' }, redis: { url: 'redis://host' } }) as NoticeConfig & Record<string, unknown>;
  const owners: Array<{ title: string; keys: string[] }> = [
    ...modules.channels.map((c) => ({ title: `Channel \`${c.name}\` (${c.description})`, keys: Object.keys(c.configShape) })),
    ...modules.sources.map((s) => ({
      title: `Source \`${s.sourceName}\` (${s.owner})`,
      keys: [...Object.keys(s.configShape), ...Object.keys(s.mqShape ?? {}).map((k) => `rocketmq.${k}`)],
    })),
  ];
  const owned = new Set(owners.flatMap((o) => o.keys));
  const sections = [{ title: 'Core', keys: Object.keys(json.properties!).filter((k) => !owned.has(k)) }, ...owners];
  const required = new Set(json.required ?? []);
  const out = [
    '# Configuration reference',
    '',
    'Generated from the zod schema by `npm run docs:config` (a test fails when this file is stale). Every key, its type and its',
    'default; the comments beside each key in `src/config/schema.ts`, `src/config/primitives.ts` and the module folders say why.',
    'Durations take `"500ms"`, `"30s"`, `"5m"`, `"1h"` or a number of milliseconds. `${VAR}` in a value reads the environment.',
    '',
  ];
  for (const section of sections) {
    out.push(`## ${section.title}`, '', '| key | type | default |', '|---|---|---|');
    for (const key of section.keys) {
      const [top, sub] = key.split('.') as [string, string | undefined];
      const node = sub ? json.properties![top]!.properties![sub]! : json.properties![top]!;
      const value = sub ? (defaults[top] as Record<string, unknown>)[sub] : defaults[top];
      // A source's subscription is listed with its source, not again under rocketmq.
      out.push(...rows(key, node, value, !sub && required.has(top) && top !== 'rocketmq', section === sections[0] ? owned : new Set()));
    }
    out.push('');
  }
  return out.join('\n');
}
