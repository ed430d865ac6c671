import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mysql, { type Pool } from 'mysql2/promise';
import { Redis } from 'ioredis';
import { stringify as toYaml } from 'yaml';
import type { NoticeConfig } from '../../src/config/schema.ts';
import { configSchema, configSchemaFor } from '../../src/composition/schema.ts';
import type { ModuleSet } from '../../src/modules/module-set.ts';
import { SOURCE_MODULES } from '../../src/notices/registry.ts';
import { runMigrations } from '../../src/db/migrate.ts';
import { createMysqlPool } from '../../src/platform/mysql.ts';
import { FakeImServer, type FakeImApp } from '../../src/fake-im/server.ts';

export const MYSQL_SERVER = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The test MySQL server's address, for a TcpProxy in front of it, and its URL through such a proxy's port. */
export const MYSQL_HOST = new URL(MYSQL_SERVER).hostname;
export const MYSQL_PORT = Number(new URL(MYSQL_SERVER).port || 3306);
export function mysqlServerVia(port: number): string {
  const url = new URL(MYSQL_SERVER);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return url.toString().replace(/\/$/, '');
}
export const TEST_SECRET = 'test-secret-key-0123456789abcdef';

export interface TestEnv {
  id: string;
  config: NoticeConfig;
  /** The same config as YAML on disk, for spawned processes. */
  configFile: string;
  notice: Pool;
  owner: Pool;
  fakeIm: FakeImServer;
  fakeImUrl: string;
  redis: Redis;
  close(): Promise<void>;
}

/**
 * A private world per test: its own notice/wallet/room databases, its own Redis key prefix, its own fake-im.
 * Nothing is shared between tests, so files run in parallel against the one MariaDB and Redis.
 */
export async function createTestEnv(
  overrides: Record<string, unknown> = {},
  options: { mysqlServerForService?: string; mysqlServer?: string; fakeImApps?: FakeImApp[]; modules?: ModuleSet } = {},
): Promise<TestEnv> {
  const server = options.mysqlServer ?? MYSQL_SERVER;
  const id = `nt${randomBytes(4).toString('hex')}`;
  const sources = options.modules?.sources ?? SOURCE_MODULES;
  const fakeIm = new FakeImServer({ sdkAppId: 1400000001, secretKey: TEST_SECRET, adminIdentifier: 'administrator', apps: options.fakeImApps });
  const fakeImUrl = await fakeIm.listen(0);
  const raw = deepMerge(
    {
      mysql: { url: `${options.mysqlServerForService ?? server}/${id}_notice`, pool_size: 8 },
      // Each source its own owner database in this world.
      ...Object.fromEntries(sources.map((m) => [`${m.key}_database`, `${id}_${m.key}`])),
      redis: { url: REDIS_URL, prefix: `{${id}}` },
      tencent_im: {
        enabled: true,
        app_code: 'lalu',
        base_url: fakeImUrl,
        sdk_app_id: 1400000001,
        secret_key: TEST_SECRET,
        admin_identifier: 'administrator',
        request_timeout: '2s',
        rate_limit_per_second: 0,
      },
      wallet_notice_worker: { enabled: true, poll_interval: '50ms', batch_size: 100, lock_ttl: '3s', max_retry_count: 3, gap_grace: '5s' },
      // The fixtures give 50 users rising balance_versions, so with skipping on most of a test's notices would be
      // superseded; tests of that feature turn it on (test/superseded.test.ts).
      deliver: {
        concurrency: 8,
        retry_base_delay: '50ms',
        retry_max_delay: '400ms',
        job_lock_duration: '4s',
        skip_superseded: { WalletBalanceChanged: false },
        // The fixtures carry fixed commit times (kicks in 2027, balances in 2024), so the default expiry would expire
        // them as the calendar moves; expiry's own tests (test/expiry.test.ts) and the fault suite set it.
        expire_after: {},
      },
      // Most tests count one ledger row per event; the inbox's own tests (and the fault suite) turn it on.
      inbox: { enabled: false, api_port: 0 },
      health: { grpc_port: 0, http_port: 0 },
      log: { level: process.env.TEST_LOG_LEVEL ?? 'silent' },
      shutdown_timeout: '5s',
    },
    overrides,
  );
  const config = (options.modules ? configSchemaFor(options.modules) : configSchema).parse(raw) as NoticeConfig;
  await runMigrations({ mysqlUrl: config.mysql.url, ownerFixtures: config });
  const dir = join(process.cwd(), '.tmp');
  mkdirSync(dir, { recursive: true });
  const configFile = join(dir, `${id}.yaml`);
  writeFileSync(configFile, toYaml(raw));
  const notice = createMysqlPool(config.mysql.url, 4);
  const owner = mysql.createPool({ uri: server, connectionLimit: 6, supportBigNumbers: true, bigNumberStrings: true });
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
  return {
    id,
    config,
    configFile,
    notice,
    owner,
    fakeIm,
    fakeImUrl,
    redis,
    async close() {
      rmSync(configFile, { force: true });
      await fakeIm.close();
      await notice.end();
      for (const db of [`${id}_notice`, ...sources.map((m) => `${id}_${m.key}`)]) await owner.query(`DROP DATABASE IF EXISTS \`${db}\``);
      await owner.end();
      // `{id}` and every app's own tag, `{id:app}` (src/config/redis-keyspace.ts).
      await deleteKeys(redis, `{${id}*`);
      redis.disconnect();
    },
  };
}

async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}

function deepMerge(base: Record<string, unknown>, extra: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(extra)) {
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export async function waitFor<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await probe();
  while (!accept(last)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)?.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 50));
    last = await probe();
  }
  return last;
}
