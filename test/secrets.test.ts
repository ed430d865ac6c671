import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, TEST_SECRET, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { kick, mqBody } from './helpers/room.ts';
import { insertActivityRows } from './helpers/activity.ts';
import { FakeRocketMqProxy } from './helpers/fake-rocketmq-proxy.ts';
import { spawnNotice, stopGracefully, waitForOutput, type Spawned } from './helpers/spawn.ts';
import { ConfigError, parseConfigText } from '../src/composition/load.ts';

const MQ_ACCESS = 'AKIDmqAccessKey0042';
const MQ_SECRET = 'mqSecretValue-do-not-print-9931';

let env: TestEnv | undefined;
let mq: FakeRocketMqProxy | undefined;
let procs: Spawned[] = [];
afterEach(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  procs = [];
  await mq?.stop();
  await env?.close();
  env = mq = undefined;
});

/** Every hash and string under the test's prefix, as text. */
async function redisDump(env: TestEnv): Promise<string> {
  let dump = '';
  for (const key of await env.redis.keys(`${env.config.redis.prefix}*`)) {
    const type = await env.redis.type(key);
    if (type === 'hash') dump += JSON.stringify(await env.redis.hgetall(key));
    else if (type === 'string') dump += await env.redis.get(key);
  }
  return dump;
}

describe('secrets never reach logs, errors or job data', () => {
  it('scans trace-level logs of ingest (with MQ credentials) and deliver through signature, transport and timeout errors', async () => {
    mq = new FakeRocketMqProxy();
    await mq.start();
    env = await createTestEnv({
      log: { level: 'trace' },
      tencent_im: { request_timeout: '500ms' },
      wallet_notice_worker: { max_retry_count: 10 },
      room_notice_worker: { max_retry_count: 10 },
      rocketmq: {
        enabled: true,
        endpoints: mq.endpoint,
        access_key: MQ_ACCESS,
        secret_key: MQ_SECRET,
        room_outbox: { enabled: true, invisible_duration: '1s', await_duration: '1s' },
      },
    });
    env.fakeIm.setFaults({
      errors: [
        { code: 70001, count: 2 },
        { code: 70003, count: 1 },
      ],
      drop_connections: 1,
      http_errors: 1,
    });
    const ingest = spawnNotice(['ingest', '--config', env.configFile]);
    procs.push(ingest);
    await waitForOutput(ingest, /notice-service started/);
    await insertWalletRows(
      env.owner,
      env.config.wallet_database,
      Array.from({ length: 10 }, (_, i) => balanceChanged(i + 1)),
    );
    // Queued jobs are what Redis holds of an event (completed ones are removed): read them before deliver starts.
    const queued = await waitFor(
      () => redisDump(env!),
      (dump) => (dump.match(/WalletBalanceChanged:100\d\d:COIN/g) ?? []).length >= 10,
      20_000,
      'ten queued jobs',
    );
    expect(queued).toContain('tx_1:WalletBalanceChanged:10001:COIN');
    for (const secret of [TEST_SECRET, MQ_ACCESS, MQ_SECRET, 'available_after', '"userId"']) expect(queued).not.toContain(secret);
    const deliver = spawnNotice(['deliver', '--config', env.configFile]);
    procs.push(deliver);
    await waitForOutput(deliver, /notice-service started/);
    // Phase one (the ten wallet facts) meets the signature and transport faults; each counted fault is answered
    // before any timeout is injected, so no signature error hides behind a request the client already gave up on.
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => (c.delivered ?? 0) + (c.failed ?? 0) === 10,
      60_000,
      'wallet facts final',
    );
    // Phase two (the MQ fact) meets two timeouts longer than the client's deadline.
    env.fakeIm.setFaults({ timeouts: 2, timeout_ms: 800 });
    mq.publish('hyapp_room_outbox', mqBody(kick(1)), { tag: 'RoomUserKicked' });
    mq.publish('hyapp_room_outbox', 'poison {', { tag: 'RoomUserKicked' });
    // Every event reaches a final state; which one does not matter here (a CPU-starved CI run may exhaust an
    // event's retries under this many injected faults) — what matters is what the logs said on the way.
    await waitFor(
      () => ledgerStatusCounts(env!.notice),
      (c) => (c.delivered ?? 0) + (c.failed ?? 0) === 11,
      60_000,
      'all final',
    );
    await Promise.all([stopGracefully(ingest), stopGracefully(deliver)]);

    const output = ingest.output() + deliver.output();
    expect(output.length).toBeGreaterThan(1000); // trace logging really happened
    expect(output).toMatch(/"code":"70001".*rejected the admin UserSig/); // the signature error was logged, as a code and a message
    expect(output).toMatch(/"code":"ETIMEDOUT".*will retry/); // and the timeouts
    expect(output).toMatch(/"code":"HTTP_502"|"code":"ECONNRESET"/); // and the transport faults
    for (const secret of [TEST_SECRET, MQ_ACCESS, MQ_SECRET]) expect(output).not.toContain(secret);
    expect(output).not.toMatch(/usersig=/i);
    expect(output).not.toMatch(/eJ[wyz][A-Za-z0-9*_-]{40,}/);

    // Redis holds ledger keys only: no secret, no payload, no user id (what is left: failed jobs, markers, events).
    const dump = await redisDump(env);
    for (const secret of [TEST_SECRET, MQ_ACCESS, MQ_SECRET, 'available_after', '"userId"']) expect(dump).not.toContain(secret);
  });

  it('the push channel logs signature, transport and timeout errors without the key, the UserSig or a payload', async () => {
    env = await createTestEnv({
      log: { level: 'trace' },
      wallet_notice_worker: { enabled: false },
      activity_notice_worker: { enabled: true, poll_interval: '50ms', max_retry_count: 10 },
      // Resending ambiguous calls walks the rows through every injected fault instead of stopping at the first.
      tencent_push: { enabled: true, request_timeout: '500ms', batch_linger: '0ms', retry_ambiguous: true },
      deliver: { retry_base_delay: '100ms', retry_max_delay: '500ms' },
    });
    env.fakeIm.setPushFaults({ errors: [{ code: 70001, count: 2 }], drop_connections: 1, http_errors: 1 });
    const all = spawnNotice(['all', '--config', env.configFile]);
    procs.push(all);
    await waitForOutput(all, /notice-service started/);
    const facts = (from: number, count: number) =>
      insertActivityRows(
        env!.owner,
        env!.config.activity_database,
        Array.from({ length: count }, (_, i) => ({
          event_id: `sec_${from + i}`,
          event_type: 'TaskCompleted',
          user_id: String(95000 + from + i),
          payload: { task_id: 'task_secret_payload', progress: 1, target: 1 },
        })),
      );
    // Phase one meets the signature and transport faults, phase two two timeouts: counted faults in that order, so
    // no signature error is answered to a request the client already gave up on.
    await facts(0, 5);
    await waitFor(
      () => Promise.resolve(env!.fakeIm.getPushStats()),
      (st) => st.by_code['70001'] === 2 && st.dropped === 1 && st.http_errors === 1,
      60_000,
      'the counted faults answered',
    );
    env.fakeIm.setPushFaults({ timeouts: 2, timeout_ms: 800 });
    await facts(5, 5);
    const finalRows = async () =>
      Number(
        (
          await env!.notice.query<any[]>(
            "SELECT COUNT(*) AS n FROM notice_delivery_events WHERE channel = 'tencent_push' AND status IN ('delivered', 'delivered_unconfirmed', 'failed')",
          )
        )[0][0].n,
      );
    await waitFor(finalRows, (n) => n === 10, 60_000, 'every push final');
    await stopGracefully(all);
    const output = all.output();
    expect(output).toMatch(/"code":"70001".*rejected the admin UserSig/);
    expect(output).toMatch(/"code":"ETIMEDOUT"/);
    expect(output).not.toContain(TEST_SECRET);
    expect(output).not.toMatch(/usersig=/i);
    expect(output).not.toMatch(/eJ[wyz][A-Za-z0-9*_-]{40,}/);
    // What operators read (the ledger's errors and the history) holds codes and messages, never the key or a sig.
    const [rows] = await env.notice.query<any[]>(
      "SELECT CONCAT_WS(' ', last_error_code, last_error, provider_ref) AS t FROM notice_delivery_events UNION ALL SELECT CONCAT_WS(' ', error_code, error_message) FROM notice_delivery_history",
    );
    const stored = rows.map((r) => String(r.t)).join('\n');
    expect(stored).not.toContain(TEST_SECRET);
    expect(stored).not.toMatch(/usersig|eJ[wyz][A-Za-z0-9*_-]{40,}/i);
  });

  it('config errors name the key, never the secret value', () => {
    try {
      parseConfigText(
        'mysql: { url: "postgres://notice:Pa55w0rdSecret@db/x" }\nredis: { url: "redis://:RedisSecret99@r" , prefix: 5 }\ntencent_im: { enabled: true, secret_key: 12345678 }',
        't',
        {},
      );
      throw new Error('accepted');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const text = (err as Error).message;
      expect(text).toContain('mysql.url');
      expect(text).toContain('tencent_im.secret_key');
      for (const secret of ['Pa55w0rdSecret', 'RedisSecret99', '12345678']) expect(text).not.toContain(secret);
    }
  });

  it('/readyz names no database user, host or password when MySQL refuses (the log has the driver message)', async () => {
    const { createMysqlPool } = await import('../src/platform/mysql.ts');
    const { readinessCheck } = await import('../src/observability/readiness.ts');
    const { Redis } = await import('ioredis');
    const { REDIS_URL } = await import('./helpers/env.ts');
    // A real server refusing a real user: the driver's message says "Access denied for user 'readyz-probe'@'…'".
    const pool = createMysqlPool('mysql://readyz-probe:Pr0beSecret@127.0.0.1:3306/nope', 1);
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    const logged: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logged.push(line) });
    try {
      const readiness = await readinessCheck(pool, redis, [], logger)();
      expect(readiness.ready).toBe(false);
      const body = JSON.stringify(readiness);
      expect(readiness.checks.mysql).toBe('down (the process log says why)');
      for (const leak of ['readyz-probe', 'Pr0beSecret', '127.0.0.1', 'Access denied']) expect(body).not.toContain(leak);
      expect(logged.join('')).toContain('readiness check failed');
      expect(logged.join('')).not.toContain('Pr0beSecret');
    } finally {
      await pool.end();
      redis.disconnect();
    }
  });
});
