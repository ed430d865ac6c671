import { afterEach, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { freePort } from './helpers/ports.ts';
import { MYSQL_SERVER, REDIS_URL, waitFor } from './helpers/env.ts';
import { PrivateRedis } from './helpers/redis-server.ts';
import { spawnNotice } from './helpers/spawn.ts';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { INBOX_PROTO } from '../src/channels/inbox/api/inbox-service.ts';

const InboxService = (grpc.loadPackageDefinition(protoLoader.loadSync(INBOX_PROTO, { keepCase: true, longs: String, enums: String, defaults: true })) as any)
  .notice.inbox.v1.InboxService;

/**
 * `npm run dev` as a person (or `timeout`, or a process manager) runs it: it must show readable logs and a summary,
 * and a SIGTERM or SIGINT to npm must stop every process it started, so the next `npm run dev` finds its ports free.
 */
let run: { child: ChildProcess; output: () => string; id: string; config: string } | undefined;

let privateRedis: PrivateRedis | undefined;
afterEach(async () => {
  await privateRedis?.destroy();
  privateRedis = undefined;
  if (!run) return;
  spawnSync('pkill', ['-KILL', '-f', run.config]);
  const root = await mysql.createConnection({ uri: MYSQL_SERVER });
  for (const db of ['notice', 'wallet', 'room', 'activity']) await root.query(`DROP DATABASE IF EXISTS \`${run.id}_${db}\``);
  await root.end();
  run = undefined;
});

async function startDev(overrides: Record<string, string> = {}) {
  const id = `dev${randomBytes(3).toString('hex')}`;
  const [fakeImPort, httpPort, dashboardPort, inboxApiPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const dir = join(process.cwd(), '.tmp', 'dev-loop');
  mkdirSync(dir, { recursive: true });
  const config = join(dir, `${id}.yaml`);
  // configs/dev.yaml with its own databases, Redis prefix and dashboard port, so a developer's running pipeline is untouched.
  writeFileSync(
    config,
    readFileSync('configs/dev.yaml', 'utf8')
      .replace(/"hyapp_(wallet|room|activity)"/g, `"${id}_$1"`)
      .replace('prefix: "{notice}"', `prefix: "{${id}}"`),
  );
  const child = spawn('npm', ['run', 'dev'], {
    env: {
      ...process.env,
      NOTICE_CONFIG: config,
      NOTICE_MYSQL_URL: `${MYSQL_SERVER}/${id}_notice`,
      NOTICE_REDIS_URL: REDIS_URL,
      FAKE_IM_PORT: String(fakeImPort),
      NOTICE_HTTP_PORT: String(httpPort),
      NOTICE_INBOX_API_PORT: String(inboxApiPort),
      NOTICE_DASHBOARD_PORT: String(dashboardPort),
      DEV_SUMMARY_EVERY: '1',
      ...overrides,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  run = { child, output: () => out, id, config };
  const env = {
    NOTICE_CONFIG: config,
    NOTICE_MYSQL_URL: `${MYSQL_SERVER}/${id}_notice`,
    NOTICE_REDIS_URL: overrides.NOTICE_REDIS_URL ?? REDIS_URL,
    FAKE_IM_PORT: String(fakeImPort),
    NOTICE_HTTP_PORT: String(httpPort),
    NOTICE_INBOX_API_PORT: String(inboxApiPort),
    NOTICE_DASHBOARD_PORT: String(dashboardPort),
  };
  return { child, output: () => out, config, fakeImPort, dashboardPort, inboxApiPort, env };
}

const listening = async (port: number) =>
  fetch(`http://127.0.0.1:${port}/`).then(
    () => true,
    () => false,
  );
const processesOf = (config: string) => spawnSync('pgrep', ['-f', config], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean);

describe('npm run dev', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('pretty-prints, summarises, and stops every child on %s to npm', async (signal) => {
    const dev = await startDev();
    await waitFor(
      async () =>
        (
          (await fetch(`http://127.0.0.1:${dev.fakeImPort}/_fake/stats`).then(
            (r) => r.json(),
            () => ({ delivered: 0 }),
          )) as { delivered: number }
        ).delivered,
      (n) => n > 0,
      60_000,
      'notices delivered by the dev pipeline',
    );
    await waitFor(
      async () => /\[dev\] facts ingested \d+ · deliveries \d+, one per fact and channel \(C2C \d+, inbox \d+, push \d+\)/.test(dev.output()),
      (ok) => ok,
      20_000,
      'a summary line',
    );
    // The demo's activity notices become phone pushes too (configs/dev.yaml turns tencent_push on).
    await waitFor(
      async () =>
        (
          (await fetch(`http://127.0.0.1:${dev.fakeImPort}/_fake/pushes`).then(
            (r) => r.json(),
            () => ({ stats: { accounts: 0 } }),
          )) as { stats: { accounts: number } }
        ).stats.accounts,
      (n) => n > 0,
      60_000,
      'phone pushes from the dev pipeline',
    );
    // Pretty lines, not JSON: "[HH:MM:ss.lll] INFO: <role> <msg> {rest}" (colours stripped).
    const plain = dev.output().replace(/\x1b\[[0-9;]*m/g, '');
    expect(plain).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: all notice-service started \{/m);
    expect(plain).not.toMatch(/^\{"level":/m);
    // The dashboard starts on its own; on a loaded machine it may come up after the first deliveries.
    await waitFor(
      () => listening(dev.dashboardPort),
      (up) => up,
      30_000,
      'the dashboard listening',
    );
    expect(processesOf(dev.config).length).toBeGreaterThanOrEqual(4);
    // The banner names the dashboard's real address (NOTICE_DASHBOARD_PORT), not the default one.
    expect(plain).toContain(`dashboard   http://127.0.0.1:${dev.dashboardPort}/admin/notices`);
    // The README's failures command, as pasted.
    const failures = spawnNotice(['failures', '--config', dev.config], dev.env);
    expect(await failures.exited).toBe(0);
    expect(failures.output()).toMatch(/^\d+\+? failed rows? \(times in /m);
    // The inbox API answers on loopback, as the README's first-five-minutes grpcurl dials it.
    // The demo gives the README's example user an item in its first batch.
    const inbox = new InboxService(`127.0.0.1:${dev.inboxApiPort}`, grpc.credentials.createInsecure());
    const unreadOf10001 = () =>
      new Promise<any>((resolve, reject) =>
        inbox.GetUnreadCount({ caller: { app_code: 'lalu', user_id: '10001' } }, (err: Error | null, res: any) => (err ? reject(err) : resolve(res))),
      );
    await waitFor(unreadOf10001, (res) => Number(res.unread.count) > 0, 20_000, 'an inbox item for user 10001');
    inbox.close();
    // The README's first-five-minutes commands, as pasted (ports moved by the same variables dev.sh reads).
    const timeline = await (await fetch(`http://127.0.0.1:${dev.dashboardPort}/admin/api/notices/timeline?user_id=10001`)).json();
    expect(timeline.facts.length).toBeGreaterThan(0);
    expect((await fetch(`http://127.0.0.1:${dev.dashboardPort}/admin/timeline?user_id=10001`)).status).toBe(200);
    const inspect = spawnNotice(['inspect', '--user', '10001', '--since', '1h', '--config', dev.config], dev.env);
    expect(await inspect.exited).toBe(0);
    expect(inspect.output()).toMatch(/user 10001/);
    const check = spawnNotice(['config', 'check', '--config', dev.config], dev.env);
    expect(await check.exited).toBe(0);
    expect(check.output()).toContain('inbox API 127.0.0.1:');

    dev.child.kill(signal);
    await new Promise((resolve) => dev.child.once('exit', resolve));
    await waitFor(
      async () => processesOf(dev.config).length,
      (n) => n === 0,
      20_000,
      'every child gone',
    );
    expect(await listening(dev.fakeImPort)).toBe(false);
    expect(await listening(dev.dashboardPort)).toBe(false);
  });

  it('keeps its summary rhythm, and one log line per component per 10 s, while Redis is down', async () => {
    privateRedis = new PrivateRedis();
    const dev = await startDev({ NOTICE_REDIS_URL: await privateRedis.start(), DEV_PRETTY: '0' });
    const summaries = (text: string) => text.split('\n').filter((line) => line.startsWith('[dev] facts ingested'));
    await waitFor(
      async () => summaries(dev.output()).length,
      (n) => n >= 2,
      90_000,
      'summary lines before the outage',
    );
    await waitFor(
      () => listening(dev.dashboardPort),
      (up) => up,
      30_000,
      'the dashboard listening',
    );
    const from = dev.output().length;
    const stoppedAt = Date.now();
    await privateRedis.stop();
    // The summary goes on at its interval (1 s here): twelve more lines, however long the machine takes for them.
    await waitFor(
      async () => summaries(dev.output().slice(from)).length,
      (n) => n >= 12,
      90_000,
      'summary lines during the outage',
    );
    const outageMs = Date.now() - stoppedAt;
    const during = dev.output().slice(from);
    if (process.env.DEV_LOOP_DUMP) (await import('node:fs')).writeFileSync(process.env.DEV_LOOP_DUMP, during);
    expect(
      summaries(during).some((line) => line.includes('NOT READY (see /readyz)')),
      'the summary says the pipeline is not ready',
    ).toBe(true);
    await privateRedis.start(privateRedis.port);
    const perComponent = new Map<string, number>();
    for (const line of during.split('\n').filter((l) => l && !l.startsWith('[dev]'))) {
      expect(line, 'every process line is a JSON record (no driver stack)').toMatch(/^\{/);
      const record = JSON.parse(line) as Record<string, unknown>;
      // A component is the process role plus whatever names the part: the source, queue, check or app.
      const key = ['role', 'source', 'queue', 'component', 'check', 'app', 'channel', 'msg'].map((field) => record[field] ?? '').join(' | ');
      perComponent.set(key, (perComponent.get(key) ?? 0) + 1);
    }
    for (const [key, count] of perComponent) expect(count, key).toBeLessThanOrEqual(Math.ceil(outageMs / 10_000) + 1);
    dev.child.kill('SIGTERM');
    await new Promise((resolve) => dev.child.once('exit', resolve));
  });
});
