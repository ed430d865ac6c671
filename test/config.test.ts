import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfigText } from '../src/composition/load.ts';

const minimal = `
mysql: { url: "mysql://root@127.0.0.1:3306/hyapp_notice" }
redis: { url: "redis://127.0.0.1:6379" }
tencent_im: { enabled: false, app_code: lalu }
`;

function problemsOf(text: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfigText(text, 'test.yaml', env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected the config to be rejected');
}

describe('config', () => {
  it('applies the seed defaults and parses durations', () => {
    const config = parseConfigText(`${minimal}\nwallet_notice_worker: { enabled: true, poll_interval: 250ms, lock_ttl: 1m }`, 't', {});
    expect(config.wallet_notice_worker).toMatchObject({ enabled: true, poll_interval: 250, batch_size: 100, lock_ttl: 60_000, max_retry_count: 10 });
    expect(config.redis.prefix).toBe('{notice}');
    expect(config.tencent_im.request_timeout).toBe(3000);
    expect(config.health).toEqual({ host: '0.0.0.0', grpc_port: 13009, http_port: 13109 });
    expect(config.dashboard.host).toBe('127.0.0.1');
    expect(config.room_notice_worker.enabled).toBe(false);
  });

  it('interpolates ${VAR} and ${VAR:-default}, including numbers', () => {
    const config = parseConfigText(
      `mysql: { url: "mysql://\${DB_USER}@db:3306/n" }\nredis: { url: "\${REDIS_URL:-redis://r:6379}" }\ntencent_im: { enabled: true, app_code: lalu, secret_key: "\${KEY}", sdk_app_id: "\${APP_ID:-1400000009}" }`,
      't',
      { DB_USER: 'notice', KEY: 's3cret' },
    );
    expect(config.mysql.url).toBe('mysql://notice@db:3306/n');
    expect(config.redis.url).toBe('redis://r:6379');
    expect(config.apps.lalu!.tencent_im).toEqual({ sdk_app_id: 1400000009, secret_key: 's3cret' });
  });

  it('names every bad key in one error: unknown keys, wrong types, bad durations, unset variables', () => {
    const problems = problemsOf(
      `mysql: { url: "postgres://x" }
redis: { url: "redis://127.0.0.1:6379", prefix: "notice" }
tencent_im: { enabled: true, secret_key: "\${TENCENT_IM_SECRET_KEY}", request_timeout: soon }
wallet_notice_worker: { enabled: "yes", batch_size: 0, pol_interval: 1s }
surprise: 1`,
    );
    const text = problems.join('\n');
    expect(text).toContain('mysql.url');
    expect(text).toContain('redis.prefix');
    expect(text).toContain('tencent_im.secret_key: environment variable TENCENT_IM_SECRET_KEY is not set');
    expect(text).toContain('tencent_im.request_timeout');
    expect(text).toContain('wallet_notice_worker.enabled');
    expect(text).toContain('wallet_notice_worker.batch_size');
    expect(text).toContain('wallet_notice_worker.pol_interval: unknown key');
    expect(text).toContain('surprise: unknown key');
  });

  it('requires mysql and redis, and a secret key when Tencent IM is enabled', () => {
    expect(problemsOf('tencent_im: { enabled: false }').join('\n')).toMatch(/mysql[\s\S]*redis|redis[\s\S]*mysql/);
    expect(problemsOf(`${minimal.replace('enabled: false', 'enabled: true')}`)).toContain('tencent_im.secret_key: required when tencent_im.enabled is true');
  });

  it('reports YAML syntax errors and missing files clearly', () => {
    expect(problemsOf('mysql: [unclosed')[0]).toMatch(/^YAML syntax/);
  });

  it('prioritises kicks over VIP over balances by default, merges skip_superseded with its default, and refuses to skip a type without versions', () => {
    const config = parseConfigText(minimal, 't', {});
    expect(config.deliver.priority).toEqual({ room_notice: 60_000, vip_notice: 20_000, activity_notice: 20_000, wallet_notice: 0 });
    expect(config.deliver.skip_superseded).toEqual({ WalletBalanceChanged: true });
    expect(
      parseConfigText(`${minimal}\ndeliver: { skip_superseded: { RoomUserKicked: false }, priority: { room_notice: 5s } }`, 't', {}).deliver,
    ).toMatchObject({ skip_superseded: { WalletBalanceChanged: true, RoomUserKicked: false }, priority: { room_notice: 5000 } });
    expect(problemsOf(`${minimal}\ndeliver: { skip_superseded: { VipActivated: true } }`).join('\n')).toMatch(
      /deliver\.skip_superseded\.VipActivated.*carry no version/,
    );
    expect(problemsOf(`${minimal}\ndeliver: { priority: { "Room Notice": 1s } }`).join('\n')).toMatch(/deliver\.priority/);
  });
});

describe('configuration reference', () => {
  it('docs/config-reference.md is what the schema generates (npm run docs:config)', async () => {
    const { readFileSync } = await import('node:fs');
    const { configReference } = await import('../src/composition/reference.ts');
    const { CHANNEL_MODULES } = await import('../src/channels/registry.ts');
    const { SOURCE_MODULES } = await import('../src/notices/registry.ts');
    const committed = readFileSync(new URL('../docs/config-reference.md', import.meta.url), 'utf8');
    expect(committed, 'stale: run npm run docs:config').toBe(configReference({ channels: CHANNEL_MODULES, sources: SOURCE_MODULES }));
    expect(committed).toMatch(/\| `tencent_push.batch_linger` \| duration .* \| `20ms` \|/);
  });
});

describe('runbook error codes', () => {
  it('docs/runbook.md carries the error guide the dashboard serves (npm run docs:errors)', async () => {
    const { readFileSync } = await import('node:fs');
    const { withErrorGuide } = await import('../src/ops/error-guide-doc.ts');
    const runbook = readFileSync(new URL('../docs/runbook.md', import.meta.url), 'utf8');
    expect(runbook, 'stale: run npm run docs:errors').toBe(withErrorGuide(runbook));
    expect(runbook).toContain('<a id="code-90012"></a>`90012`');
  });
});

describe('per-kind defaults', () => {
  it('come from the source modules: the core alone names no kind or event type', async () => {
    const { configSchemaFor, REGISTERED_MODULES } = await import('../src/composition/schema.ts');
    const minimal = { mysql: { url: 'mysql://x/y' }, redis: { url: 'redis://x' }, apps: { lalu: {} } };
    const bare = configSchemaFor({ channels: REGISTERED_MODULES.channels, sources: [] }).parse(minimal);
    expect(bare.deliver.priority).toEqual({});
    expect(bare.deliver.expire_after).toEqual({});
    expect(bare.deliver.skip_superseded).toEqual({});
    expect(bare.preferences.mandatory_kinds).toEqual([]);
    expect(() =>
      configSchemaFor({ channels: REGISTERED_MODULES.channels, sources: [] }).parse({
        ...minimal,
        deliver: { skip_superseded: { WalletBalanceChanged: true } },
      }),
    ).toThrow(/only no type \(no source declares one\) can be skipped/);
    const registered = configSchemaFor(REGISTERED_MODULES).parse(minimal);
    expect(registered.deliver.priority).toEqual({ wallet_notice: 0, vip_notice: 20_000, room_notice: 60_000, activity_notice: 20_000 });
    expect(registered.deliver.expire_after).toEqual({ room_notice: 600_000 });
    expect(registered.deliver.skip_superseded).toEqual({ WalletBalanceChanged: true });
    expect(registered.preferences.mandatory_kinds).toEqual(['room_notice']);
  });
});
