import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createTestEnv, type TestEnv } from './helpers/env.ts';
import { createDashboardApp } from '../dashboard/app.ts';
import { createDeliverQueues, type DeliverQueues } from '../queues/deliver-queue.ts';
import { channelQueueSpecs } from '../src/channels/channel-set.ts';
import { createRedis, type Redis } from '../src/platform/redis.ts';

/** The login edge: what a failed login logs, how guessing is slowed, and what the answers announce. */
const PASSWORD = 'correct-horse-battery';
let env: TestEnv;
let server: Server;
let redis: Redis;
let queues: DeliverQueues;
let base: string;
const logged: string[] = [];
let device = '';
const basic = (credentials: string) => ({ authorization: `Basic ${Buffer.from(credentials).toString('base64')}` });

beforeAll(async () => {
  env = await createTestEnv({
    dashboard: { port: 0, auth: { username: 'ops', password: PASSWORD, max_failed_logins: 5 }, environment: { label: 'test', color: '#b00020' } },
  });
  redis = createRedis(env.config.redis.url, 'producer');
  queues = createDeliverQueues(redis, env.config.redis.prefix, channelQueueSpecs(env.config));
  const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(line) });
  const app = createDashboardApp(env.config, env.notice, queues, logger);
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/admin`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  await queues?.close();
  redis?.disconnect();
  await env?.close();
});

describe('dashboard login', () => {
  it('never logs what was typed: a password in the user box, credentials without a colon', async () => {
    // A browser that logged in before (its device cookie) — taken first so the throttle test below has one.
    await fetch(`${base}/api/notices/failed`, { headers: basic(`${PASSWORD}:oops`) });
    await fetch(`${base}/api/notices/failed`, { headers: basic(`${PASSWORD}`) });
    await fetch(`${base}/api/notices/failed`, { headers: basic(`ops:${PASSWORD}x`) });
    const failures = logged.filter((l) => l.includes('dashboard login failed'));
    expect(failures).toHaveLength(3);
    for (const line of failures) expect(line).not.toContain(PASSWORD);
    expect(failures.map((l) => JSON.parse(l).known_user)).toEqual([false, false, true]);
  });

  it('slows guessing from an address without locking out a browser that has logged in before', async () => {
    const good = await fetch(`${base}/api/notices/failed`, { headers: basic(`ops:${PASSWORD}`) });
    expect(good.status).toBe(200);
    const cookie = good.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^ns_device=[\w-]+\.[\w-]+; Max-Age=2592000; Path=\/admin; .*HttpOnly; SameSite=Strict/);
    device = cookie.split(';')[0]!;
    // The attacker, from the same address (all operators share the proxy's), exhausts the address's budget.
    const guesses: number[] = [];
    for (let i = 0; i < 4; i++) guesses.push((await fetch(`${base}/api/notices/failed`, { headers: basic(`ops:guess-${i}`) })).status);
    expect(guesses.slice(-2)).toEqual([429, 429]);
    // The right password from a new browser waits out the window like the attacker; the known browser does not.
    expect((await fetch(`${base}/api/notices/failed`, { headers: basic(`ops:${PASSWORD}`) })).status).toBe(429);
    expect((await fetch(`${base}/api/notices/failed`, { headers: { ...basic(`ops:${PASSWORD}`), cookie: device } })).status).toBe(200);
    // A forged or foreign cookie is no way around it.
    expect((await fetch(`${base}/api/notices/failed`, { headers: { ...basic('ops:guess-x'), cookie: `${device.slice(0, -2)}AA` } })).status).toBe(429);
  });

  it('bull-board answers without X-Powered-By', async () => {
    const res = await fetch(`${base}/queues/`, { headers: { ...basic(`ops:${PASSWORD}`), cookie: device } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-powered-by')).toBeNull();
    const api = await fetch(`${base}/queues/api/queues`, { headers: { ...basic(`ops:${PASSWORD}`), cookie: device } });
    expect(api.headers.get('x-powered-by')).toBeNull();
  });
});
