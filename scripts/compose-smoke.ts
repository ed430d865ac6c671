/**
 * `npm run compose:smoke`: docker-compose.yml run without Docker. Every notice-service service of the compose file is
 * started on this host with its own command and environment (compose's `${VAR:-default}` resolved), in its
 * depends_on order; the compose hostnames become loopback stand-ins: MariaDB for `mysql` (set up by the same
 * docker/mysql-init script, with a non-default password flowing through the same variable), a private redis-server
 * for `redis`, and the in-process RocketMQ proxy fake for `rmq-proxy`. Each service gets its own health and
 * dashboard ports (each container has its own network namespace; one host does not).
 *
 * It asserts what a developer expects from `docker compose up`: wallet, VIP, room and activity notices (and the phone
 * pushes of activity and VIP notices) reach fake-im within
 * two minutes **while RocketMQ is down**; then, once the proxy is up, the demo's kicks come through the MQ entry too.
 * It catches wiring mistakes between services (ports, variable names, depends_on order) that `docker-compose config`
 * cannot. Not covered: the images, the JVMs, MySQL 8.4 itself (see docs/docker.md).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { parse } from 'yaml';
import mysql from 'mysql2/promise';
import { spawnNotice, type Spawned } from '../test/helpers/spawn.ts';
import { freePort } from '../test/helpers/ports.ts';
import { PrivateRedis } from '../test/helpers/redis-server.ts';
import { FakeRocketMqProxy } from '../test/helpers/fake-rocketmq-proxy.ts';

const DEADLINE_MS = 120_000;
const MYSQL_ROOT = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';
const log = (text: string) => process.stderr.write(`[compose-smoke] ${text}\n`);

interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[]; disable?: boolean };
}

/** Compose-style interpolation of `${VAR}`, `${VAR:-default}` and `$$`, against `env`. */
export function interpolate(text: string, env: Record<string, string | undefined>): string {
  return text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (all, name: string | undefined, fallback: string | undefined) => {
    if (all === '$$') return '$';
    const value = env[name!];
    return value === undefined || value === '' ? (fallback ?? '') : value;
  });
}

/** Replaces `from` with `to` in text, and fails loudly if `from` is not there exactly once (the compose config moved). */
function replaceOnce(text: string, from: string, to: string): string {
  const count = text.split(from).length - 1;
  if (count !== 1) throw new Error(`configs/docker.yaml: expected "${from}" once, found it ${count} times; update scripts/compose-smoke.ts`);
  return text.replace(from, to);
}

/** The services in an order that honours depends_on. */
function startOrder(services: Record<string, ComposeService>): string[] {
  const done: string[] = [];
  const visit = (name: string, path: string[]) => {
    if (done.includes(name)) return;
    if (path.includes(name)) throw new Error(`depends_on cycle: ${[...path, name].join(' → ')}`);
    for (const dep of Object.keys(services[name]?.depends_on ?? {})) visit(dep, [...path, name]);
    done.push(name);
  };
  for (const name of Object.keys(services)) visit(name, []);
  return done;
}

async function waitUntil<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, deadline: number): Promise<T> {
  for (;;) {
    const value = await read().catch(() => undefined as T);
    if (value !== undefined && ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(value)?.slice(0, 300)})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main(): Promise<void> {
  const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };
  const services = compose.services;
  const ours = Object.keys(services).filter((name) => services[name]!.image === 'notice-service:local');
  const standIns = new Set(['mysql', 'redis', 'rmq-namesrv', 'rmq-broker', 'rmq-proxy', 'rmq-init']);
  const unknown = Object.keys(services).filter((name) => !ours.includes(name) && !standIns.has(name));
  if (unknown.length) throw new Error(`services without a stand-in here: ${unknown.join(', ')}`);
  // The wallet path must not wait on RocketMQ.
  for (const name of ours) {
    const gated = Object.keys(services[name]!.depends_on ?? {}).filter((dep) => dep.startsWith('rmq-'));
    if (gated.length) throw new Error(`${name} depends_on ${gated.join(', ')}: a RocketMQ problem would stop notices that do not need it`);
  }

  // What a developer's .env might set: a non-default MySQL password must reach the init and every service.
  const id = `cs${randomBytes(3).toString('hex')}`;
  const shellEnv: Record<string, string> = { NOTICE_MYSQL_PASSWORD: `smoke-${randomBytes(4).toString('hex')}`, DASHBOARD_PASSWORD: 'smoke-dashboard-pass' };
  const envOf = (name: string) => Object.fromEntries(Object.entries(services[name]!.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), shellEnv)]));

  const tmp = join(process.cwd(), '.tmp', 'compose-smoke', id);
  mkdirSync(tmp, { recursive: true });
  const procs: Array<{ name: string; proc: Spawned }> = [];
  const redis = new PrivateRedis(['--maxmemory-policy', 'noeviction']);
  const mq = new FakeRocketMqProxy();
  const root = await mysql.createConnection({ uri: MYSQL_ROOT });
  const user = `${id}_u`;
  try {
    // mysql: the compose init script, with the mysql service's environment, against MariaDB.
    const mysqlEnv = envOf('mysql');
    const rootUrl = new URL(MYSQL_ROOT);
    const init = spawnSync('bash', ['docker/mysql-init/01-databases.sh'], {
      env: {
        ...process.env,
        ...mysqlEnv,
        MYSQL_ROOT_PASSWORD: decodeURIComponent(rootUrl.password),
        NOTICE_DB_PREFIX: id,
        NOTICE_DB_USER: user,
        MYSQL_CLIENT: 'mariadb',
        MYSQL_CLIENT_ARGS: `--protocol=tcp -h${rootUrl.hostname} -P${rootUrl.port || 3306}`,
      },
      encoding: 'utf8',
    });
    if (init.status !== 0) throw new Error(`docker/mysql-init/01-databases.sh failed: ${init.stderr || init.stdout}`);
    log(init.stdout.trim());
    const redisUrl = await redis.start();
    const mqPort = await freePort(); // RocketMQ comes up later, on this port

    // fake-im's port from its compose command, and the ports every config points at.
    const fakeImCommand = [...services['fake-im']!.command!];
    const fakeImPortAt = fakeImCommand.indexOf('--port') + 1;
    const fakeImPort = await freePort();
    fakeImCommand[fakeImPortAt] = String(fakeImPort);
    const fakeImHostAt = fakeImCommand.indexOf('--host') + 1;
    if (fakeImHostAt > 0) fakeImCommand[fakeImHostAt] = '127.0.0.1';

    const dockerYaml = readFileSync('configs/docker.yaml', 'utf8');
    const configPath = (name: string) => join(tmp, `${name}.yaml`);
    const ports = new Map<string, { http: number; grpc: number; dashboard: number }>();
    for (const name of ours) {
      const p = { http: await freePort(), grpc: await freePort(), dashboard: await freePort() };
      ports.set(name, p);
      let text = dockerYaml;
      text = replaceOnce(text, 'mysql://hyapp:', `mysql://${user}:`);
      text = replaceOnce(text, '@mysql:3306/hyapp_notice', `@${rootUrl.hostname}:${rootUrl.port || 3306}/${id}_notice`);
      text = replaceOnce(text, 'wallet_database: "hyapp_wallet"', `wallet_database: "${id}_wallet"`);
      text = replaceOnce(text, 'room_database: "hyapp_room"', `room_database: "${id}_room"`);
      text = replaceOnce(text, 'activity_database: "hyapp_activity"', `activity_database: "${id}_activity"`);
      text = replaceOnce(text, 'url: "redis://redis:6379"', `url: "${redisUrl}"`);
      text = replaceOnce(text, 'base_url: "http://fake-im:18080"', `base_url: "http://127.0.0.1:${fakeImPort}"`);
      text = replaceOnce(text, 'endpoints: "rmq-proxy:8081"', `endpoints: "127.0.0.1:${mqPort}"`);
      text = replaceOnce(text, 'health: { grpc_port: 13009, http_port: 13109 }', `health: { grpc_port: ${p.grpc}, http_port: ${p.http} }`);
      text = replaceOnce(text, '  port: 13200', `  port: ${p.dashboard}`);
      // Inside a container 0.0.0.0 is its own namespace; on this host, loopback.
      text = replaceOnce(text, '  host: 0.0.0.0 ', '  host: 127.0.0.1 ');
      writeFileSync(configPath(name), text);
    }
    // The compose healthchecks must probe the ports the config really opens.
    const dockerConfig = parse(dockerYaml) as { health: { http_port: number } };
    for (const name of ours) {
      const test = services[name]!.healthcheck?.test?.join(' ') ?? '';
      const probed = /127\.0\.0\.1:(\d+)\//.exec(test)?.[1];
      const expected = name === 'fake-im' ? services['fake-im']!.command![fakeImPortAt] : String(dockerConfig.health.http_port);
      if (!services[name]!.healthcheck?.disable && probed !== expected)
        throw new Error(`${name}: healthcheck probes port ${probed}, the service listens on ${expected}`);
    }

    const deadline = Date.now() + DEADLINE_MS;
    const healthUrl = (name: string) => (name === 'fake-im' ? `http://127.0.0.1:${fakeImPort}/healthz` : `http://127.0.0.1:${ports.get(name)!.http}/healthz`);
    for (const name of startOrder(services).filter((n) => ours.includes(n))) {
      for (const [dep, { condition }] of Object.entries(services[name]!.depends_on ?? {})) {
        if (!ours.includes(dep)) continue;
        if (condition === 'service_completed_successfully') {
          const done = procs.find((p) => p.name === dep)!;
          const code = await done.proc.exited;
          if (code !== 0) throw new Error(`${dep} exited with ${code}:\n${done.proc.output().slice(-2000)}`);
        } else if (condition === 'service_healthy') {
          await waitUntil(
            `${dep} healthy`,
            async () => (await fetch(healthUrl(dep))).status,
            (s) => s === 200,
            deadline,
          );
        }
      }
      const env = { ...envOf(name), NOTICE_CONFIG: configPath(name) };
      const command = name === 'fake-im' ? fakeImCommand : services[name]!.command!;
      log(`starting ${name}: ${command.join(' ')}`);
      procs.push({ name, proc: spawnNotice(command, env) });
    }

    // RocketMQ is down: wallet, VIP and room (outbox) notices must flow anyway.
    const messages = async () =>
      ((await (await fetch(`http://127.0.0.1:${fakeImPort}/_fake/messages`)).json()) as { messages: Array<{ ext: string; duplicate: boolean }> }).messages;
    const byKind = (list: Array<{ ext: string }>) => list.reduce<Record<string, number>>((acc, m) => ({ ...acc, [m.ext]: (acc[m.ext] ?? 0) + 1 }), {});
    const first = await waitUntil(
      'wallet, VIP, room and activity notices with RocketMQ down',
      async () => byKind(await messages()),
      (k) => (k.wallet_notice ?? 0) > 0 && (k.vip_notice ?? 0) > 0 && (k.room_notice ?? 0) > 0 && (k.activity_notice ?? 0) > 0,
      deadline,
    );
    // Activity and VIP notices are phone pushes too (configs/docker.yaml routes them to tencent_push).
    await waitUntil(
      'phone pushes for activity notices',
      async () => ((await (await fetch(`http://127.0.0.1:${fakeImPort}/_fake/pushes`)).json()) as { stats: { accounts: number } }).stats.accounts,
      (n) => n > 0,
      deadline,
    );
    log(`with RocketMQ down, fake-im received ${JSON.stringify(first)}`);
    await waitUntil(
      'the dashboard',
      async () =>
        (
          await fetch(`http://127.0.0.1:${ports.get('dashboard')!.dashboard}/admin/notices`, {
            headers: { authorization: `Basic ${Buffer.from(`admin:${shellEnv.DASHBOARD_PASSWORD}`).toString('base64')}` },
          })
        ).status,
      (s) => s === 200,
      deadline,
    );

    // RocketMQ comes up: the demo's publisher connects and ingest's consumer acks its kicks.
    await mq.start(mqPort);
    log(`RocketMQ proxy fake up on ${mqPort}`);
    await waitUntil(
      'kicks through the MQ entry',
      async () => mq.acked.length,
      (n) => n > 0,
      Date.now() + 60_000,
    );
    const all = await messages();
    if (all.some((m) => m.duplicate)) log(`note: ${all.filter((m) => m.duplicate).length} resends filtered by fake-im's dedup`);
    log(`passed: ${mq.acked.length} MQ messages acked; fake-im received ${JSON.stringify(byKind(all))}`);
  } catch (err) {
    for (const { name, proc } of procs) process.stderr.write(`\n--- ${name} (exit ${proc.child.exitCode}) ---\n${proc.output().slice(-3000)}\n`);
    throw err;
  } finally {
    for (const { proc } of procs) if (proc.child.exitCode === null) proc.child.kill('SIGTERM');
    await Promise.all(procs.map(({ proc }) => Promise.race([proc.exited, new Promise((r) => setTimeout(r, 15_000))])));
    for (const { proc } of procs) if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
    await mq.stop();
    await redis.destroy();
    for (const db of ['notice', 'wallet', 'room', 'activity']) await root.query(`DROP DATABASE IF EXISTS \`${id}_${db}\``);
    await root.query(`DROP USER IF EXISTS '${user}'@'%'`);
    await root.end();
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    log(`FAILED: ${err.message}`);
    process.exit(1);
  },
);
