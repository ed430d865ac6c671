import { readFileSync } from 'node:fs';
import { routingProblems } from '../channels/routing.ts';
import { parse as parseYaml } from 'yaml';
import type { NoticeConfig } from '../config/schema.ts';
import { configSchema, configSchemaFor, REGISTERED_MODULES, upgradeConfig } from './schema.ts';
import type { ModuleSet } from '../modules/module-set.ts';
import { channelModules } from '../channels/channel-set.ts';
import { interpolate, type InterpolationProblem } from '../config/interpolate.ts';

/** Thrown when the config cannot be used; the message names every bad key at once. */
export class ConfigError extends Error {
  readonly problems: string[];
  constructor(file: string, problems: string[]) {
    super(`invalid config ${file}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.NOTICE_CONFIG || 'configs/local.yaml';
}

/** Reads and validates a config file; `modules` adds modules beyond the registries' (the examples in test/). */
export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env, modules?: ModuleSet): NoticeConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, [`cannot read file: ${(err as NodeJS.ErrnoException).code ?? String(err)}`]);
  }
  return parseConfigText(text, file, env, modules);
}

export function parseConfigText(text: string, file: string, env: NodeJS.ProcessEnv = process.env, modules?: ModuleSet): NoticeConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    throw new ConfigError(file, [`YAML syntax: ${(err as Error).message.split('\n')[0]}`]);
  }
  const interpolationProblems: InterpolationProblem[] = [];
  const interpolated = interpolate(raw, env, interpolationProblems);
  const result = (modules ? configSchemaFor(modules) : configSchema).safeParse(interpolated);
  const upgrade = upgradeConfig(interpolated, modules ?? REGISTERED_MODULES);
  const problems = [...interpolationProblems.map((p) => `${p.path}: ${p.message}`), ...upgrade.problems.map((p) => `${p.path.join('.')}: ${p.message}`)];
  if (!result.success) {
    for (const issue of result.error.issues) {
      const path = issue.path.join('.') || '(root)';
      if (issue.code === 'unrecognized_keys') {
        for (const key of issue.keys) problems.push(`${path === '(root)' ? key : `${path}.${key}`}: unknown key`);
      } else {
        problems.push(`${path}: ${issue.message}`);
      }
    }
  } else {
    problems.push(...crossFieldProblems(result.data as NoticeConfig));
  }
  if (problems.length > 0) throw new ConfigError(file, problems);
  return Object.defineProperty(result.data as NoticeConfig, DEPRECATED, { value: upgrade.deprecated, enumerable: false });
}

const DEPRECATED = Symbol('config keys read from their old place');

/** The keys this config had in the place an earlier release read them from, each saying where they belong now. */
export function configDeprecations(config: NoticeConfig): readonly string[] {
  return (config as { [DEPRECATED]?: string[] })[DEPRECATED] ?? [];
}

function crossFieldProblems(config: NoticeConfig): string[] {
  const problems: string[] = [];
  if (Object.keys(config.apps).length === 0) {
    problems.push(
      "apps: required — list the app_codes this deployment serves (apps: { lalu: {} }, with each Tencent app's credentials under " +
        'apps.<app_code>.tencent_im); a fact of an app not listed is never sent',
    );
  }
  if (config.rocketmq.name_servers !== undefined) {
    problems.push('rocketmq.name_servers: the RocketMQ 5 client talks to the proxy, not namesrv; set rocketmq.endpoints to the proxy gRPC address (port 8081)');
  }
  if (!config.dashboard.auth.enabled && config.dashboard.environment.label !== 'local') {
    problems.push('dashboard.auth.enabled: only a local config (dashboard.environment.label: local) may turn dashboard authentication off');
  }
  if (config.dashboard.auth.enabled && config.dashboard.auth.password.length > 0 && config.dashboard.auth.password.length < 8) {
    problems.push('dashboard.auth.password: use at least 8 characters');
  }
  if (config.rocketmq.request_timeout < 1000) {
    problems.push('rocketmq.request_timeout: the client requires at least 1s');
  }
  problems.push(...routingProblems(config), ...channelModules(config).flatMap((m) => m.configProblems?.(config) ?? []));
  if (Boolean(config.rocketmq.access_key) !== Boolean(config.rocketmq.secret_key)) {
    problems.push('rocketmq.access_key/secret_key: set both or neither');
  }
  return problems;
}
