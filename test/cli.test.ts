import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, MYSQL_SERVER, waitFor, type TestEnv } from './helpers/env.ts';
import { serverOf, serverProblem } from '../src/ops/server-errors.ts';
import { BIN, spawnNotice } from './helpers/spawn.ts';
import { AuditLog } from '../src/ops/audit-log.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { insertActivityRows } from './helpers/activity.ts';

/** The CLI as an operator meets it: plain answers when there is nothing, and no Redis for commands that need none. */
let env: TestEnv | undefined;
afterEach(async () => {
  await env?.close();
  env = undefined;
});

const run = async (args: string[], withConfig = true) => {
  const p = spawnNotice(withConfig ? [...args, '--config', env!.configFile] : args);
  const started = Date.now();
  // A liveness guard, not a speed budget: a starved box (nice 19 beside a CPU hog) takes seconds to start a process.
  const code = await Promise.race([p.exited, new Promise((r) => setTimeout(() => r('hung'), 90_000))]);
  if (code === 'hung') p.child.kill('SIGKILL');
  return { code, out: p.output(), ms: Date.now() - started };
};

describe('notice-service CLI', () => {
  it('every usage error exits 2 with one line naming the problem and the valid values; a missing thing exits 1', async () => {
    env = await createTestEnv({});
    const c = ['--config', env.configFile];
    const table: Array<[string[], number, RegExp]> = [
      [['frobnicate'], 2, /unknown command 'frobnicate'/],
      [['inspect', '--bogus'], 2, /unknown option '--bogus'/],
      [['inspect', '--user'], 2, /option '--user <user_id>' argument missing/],
      [['revoke', 'a', 'b'], 2, /too many arguments for 'revoke'/],
      [['inspect', '--user', '1', '--since', '2', ...c], 2, /--since must be a duration like "2h" or an ISO time like "2026-12-01T08:00:00Z", got "2"/],
      [['inspect', '--user', '1', '--until', 'tomorrow', ...c], 2, /--until must be a duration/],
      [['inspect', '--user', '1', '--channel', 'c2c', ...c], 2, /--channel must be one of tencent_im_c2c, inbox, tencent_push, got "c2c"/],
      [['inspect', '--user', '1', '--kind', 'wallet', ...c], 2, /--kind must be one of wallet_notice, vip_notice, room_notice, activity_notice, got "wallet"/],
      [['inspect', '--user', '1', '--status', 'lost', ...c], 2, /--status must be one of .*delivered.*, got "lost"/],
      [['inspect', '--user', '1', '--limit', 'many', ...c], 2, /--limit must be an integer from 1 to 1000, got "many"/],
      [['inspect', '--user', '1', '--output', 'yaml', ...c], 2, /--output must be table or json, got "yaml"/],
      [
        ['requeue', '--status', 'failed', '--source', 'wallet', '--yes', ...c],
        2,
        /--source must be one of wallet_outbox, room_outbox, activity_outbox, got "wallet"/,
      ],
      [['requeue', '--status', 'failed', '--channel', 'push', '--yes', ...c], 2, /--channel must be one of tencent_im_c2c, inbox, tencent_push, got "push"/],
      [['revoke', 'x', '--wait', 'abc', ...c], 2, /--wait must be a duration like "30s" or "2m", got "abc"/],
      [['rejects', 'show', '999', ...c], 1, /no rejected message with id 999/],
    ];
    const results: Array<Awaited<ReturnType<typeof run>>> = [];
    for (let i = 0; i < table.length; i += 5) results.push(...(await Promise.all(table.slice(i, i + 5).map(([args]) => run(args, false)))));
    table.forEach(([args, code, message], i) => {
      const r = results[i]!;
      expect(r.code, `${args.join(' ')}: ${r.out}`).toBe(code);
      expect(r.out, args.join(' ')).toMatch(message);
      // One line, and no stack, zod dump or "null".
      expect(r.out.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.out).not.toMatch(/\n\s+at |ZodError|^null$/m);
    });
  }, 300_000);

  it('answering no at the requeue prompt changes nothing, says so, and exits 1', async () => {
    env = await createTestEnv({});
    await env.notice.query(
      `INSERT INTO notice_delivery_events (source_name, app_code, source_event_id, channel, event_type, user_id, notice_kind, status, attempt_count, created_at_ms, updated_at_ms, last_error_code)
       VALUES ('wallet_outbox', 'lalu', 'no_1', 'tencent_im_c2c', 'WalletBalanceChanged', '1', 'wallet_notice', 'failed', 3, ?, ?, '90012')`,
      [Date.now(), Date.now()],
    );
    // A real terminal (script(1) gives the command a pty), answered "n".
    const { spawn } = await import('node:child_process');
    const command = `${process.execPath} ${BIN} requeue --status failed --config ${env.configFile}`;
    const child = spawn('script', ['-qec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (/\[y\/N\]/.test(out) && !child.stdin.writableEnded) child.stdin.end('n\n');
    });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(out).toMatch(/requeue 1 failed row\? \[y\/N\]/);
    expect(out).toMatch(/nothing changed: 1 row match; answered no/);
    expect(out).not.toMatch(/would requeue/);
    expect(code).toBe(1);
    const [rows] = await env.notice.query<any[]>("SELECT status FROM notice_delivery_events WHERE source_event_id = 'no_1'");
    expect(rows[0].status).toBe('failed');
  }, 300_000);

  it('inspect shows owner-written controls, bidi overrides and newlines as [U+XXXX], in text and JSON alike', async () => {
    env = await createTestEnv({ activity_notice_worker: { enabled: true, poll_interval: '50ms' } });
    const hostile = 'ev\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e\nFAKE 2026-01-01 level=info msg=ok';
    await insertActivityRows(env.owner, env.config.activity_database, [
      { event_id: hostile, event_type: 'SystemNotice', user_id: '57001', payload: { title_key: 'notice.t', body_key: 'notice.b' } },
    ]);
    const proc = await startPipeline(env.config, ['ingest']);
    try {
      await waitFor(
        async () => Number((await env!.notice.query<any[]>('SELECT COUNT(*) AS n FROM notice_delivery_events'))[0][0].n),
        (n) => n > 0,
        20_000,
        'the fact recorded',
      );
    } finally {
      await proc.stop();
    }
    const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;
    const table = await run(['inspect', '--user', '57001']);
    expect(table.code).toBe(0);
    expect(table.out).not.toMatch(raw);
    expect(table.out).toContain('ev[U+001B]]0;pwned[U+0007][U+001B][2J[U+009B]31m[U+202E][U+000A]FAKE');
    expect(table.out).not.toMatch(/^FAKE/m);
    const json = await run(['inspect', '--user', '57001', '--output', 'json']);
    expect(json.out).not.toMatch(raw);
    expect(JSON.parse(json.out.slice(json.out.indexOf('{'))).facts[0].event_id).toBe(hostile);
  }, 300_000);

  it('says why inspect finds nothing, refuses to requeue a rejected message that does not exist, and audits only what existed', async () => {
    env = await createTestEnv({});
    const inspect = await run(['inspect', '10042']);
    expect(inspect.code).toBe(1);
    expect(inspect.out).toContain('no ledger row has event id "10042" (an event id, not a user id');
    const requeue = await run(['rejects', 'requeue', '999']);
    expect(requeue.code).toBe(1);
    expect(requeue.out).toContain('no rejected message with id 999');
    const [audit] = await new AuditLog(env.notice).recent(1);
    expect(audit).toMatchObject({ action: 'requeue_rejected', matched: 0, affected: 0 });
  }, 300_000);

  it('inspect --user is readable by default and JSON on request; a down server is one line, exit 3', async () => {
    env = await createTestEnv({ display: { time_zone: 'Asia/Shanghai' } });
    env.fakeIm.setFaults({ not_imported: ['10002'] });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(2), balanceChanged(52)]);
    const proc = await startPipeline(env.config);
    try {
      await waitFor(
        () => ledgerStatusCounts(env!.notice),
        (c) => c.failed === 2,
        15_000,
        'both refused',
      );
    } finally {
      await proc.stop();
    }
    const table = await run(['inspect', '--user', '10002', '--since', '1h']);
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d Asia\/Shanghai {2}WalletBalanceChanged · wallet_notice {2}user 10002 {2}tx_52:/m);
    expect(table.out).toContain('tencent_im_c2c  failed');
    expect(table.out).toContain('failed with 90012: the recipient is not an imported Tencent IM account');
    expect(table.out).toContain('what to do: Import the account');
    expect(table.out).toContain('2 facts, newest first, times in Asia/Shanghai');
    const json = await run(['inspect', '--user', '10002', '--output', 'json']);
    expect(JSON.parse(json.out.slice(json.out.indexOf('{'))).facts.map((f: { event_id: string }) => f.event_id)).toEqual([
      'tx_52:WalletBalanceChanged:10002:COIN',
      'tx_2:WalletBalanceChanged:10002:COIN',
    ]);
    const nobody = await run(['inspect', '--user', '77777']);
    expect(nobody.code).toBe(1);
    expect(nobody.out).toContain('no facts for user 77777 match');
    expect((await run(['inspect', '--user', '10002', '--output', 'yaml'])).out).toContain('--output must be table or json, got "yaml"');

    // Redis down: inspect still answers from MySQL (job state unknown); requeue, which needs Redis, says so.
    writeFileSync(env.configFile, readFileSync(env.configFile, 'utf8').replace(/url: redis:\/\/[^\n]+/, 'url: redis://127.0.0.1:1'));
    const noRedis = await run(['inspect', 'tx_2:WalletBalanceChanged:10002:COIN', '--output', 'json']);
    expect(noRedis.code).toBe(0);
    expect(JSON.parse(noRedis.out.slice(noRedis.out.indexOf('[')))[0].job).toBe('unknown: Redis is unreachable');
    const requeue = await run(['requeue', '--status', 'failed', '--yes']);
    expect(requeue.code).toBe(3);
    expect(requeue.out.trim()).toBe('notice-service: Redis at 127.0.0.1:1 is unreachable (connection refused: is it running?); this command needs it');
    // (The connect timeout is 5 s; how long the whole command takes depends on the machine, so it is not asserted.)
    // MySQL down: every command that reads the ledger says so in one line.
    writeFileSync(env.configFile, readFileSync(env.configFile, 'utf8').replace(/url: mysql:\/\/[^\n]+/, 'url: mysql://root@127.0.0.1:1/x'));
    for (const args of [['inspect', '--user', '10002'], ['audit'], ['rejects']]) {
      const r = await run(args);
      expect(r.code, `${args.join(' ')}: ${r.out}`).toBe(3);
      expect(r.out.trim()).toBe('notice-service: MySQL at 127.0.0.1:1 is unreachable (connection refused: is it running?)');
    }
    const migrate = await run(['migrate']);
    expect(migrate.code, migrate.out).toBe(3);
    expect(migrate.out.trim()).toBe('notice-service: MySQL at 127.0.0.1:1 is unreachable (connection refused: is it running?)');
    // A server that answers but has no ledger yet says what to run.
    writeFileSync(env.configFile, readFileSync(env.configFile, 'utf8').replace(/url: mysql:\/\/[^\n]+/, `url: ${MYSQL_SERVER}/never_migrated_db`));
    const unmigrated = await run(['failures']);
    expect(unmigrated.code, unmigrated.out).toBe(3);
    expect(unmigrated.out.trim()).toBe(
      `notice-service: MySQL at ${serverOf(MYSQL_SERVER)} has no database never_migrated_db: run \`notice-service migrate\` first`,
    );
  }, 300_000);

  it('audit, rejects and requeue --dry-run work with Redis down (they need only MySQL); a real requeue says Redis is needed', async () => {
    env = await createTestEnv({});
    writeFileSync(env.configFile, readFileSync(env.configFile, 'utf8').replace(/url: redis:\/\/[^\n]+/, 'url: redis://127.0.0.1:1'));
    for (const args of [['audit'], ['rejects'], ['rejects', 'show', '1']]) {
      const r = await run(args);
      expect(r.code, `${args.join(' ')}: ${r.out}`).not.toBe('hung');
      expect(r.out).not.toMatch(/ECONNREFUSED/);
    }
    const dry = await run(['requeue', '--status', 'failed', '--dry-run']);
    expect(dry.code, dry.out).toBe(0);
    expect(dry.out).toContain('would requeue 0');
    const real = await run(['requeue', '--status', 'failed', '--yes']);
    expect(real.code, real.out).toBe(3);
    expect(real.out.trim()).toMatch(/^notice-service: Redis at .+ is unreachable \(.+\); this command needs it$/);
  }, 300_000);

  it('a server problem is one line in words, whatever the driver said', () => {
    const url = 'mysql://ops:Hunter2secret@db.internal:3307/notice';
    const cases: Array<[unknown, string]> = [
      [
        Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:3307'), { code: 'ECONNREFUSED' }),
        'MySQL at db.internal:3307 is unreachable (connection refused: is it running?)',
      ],
      [
        new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })], ''),
        'MySQL at db.internal:3307 is unreachable (connection refused: is it running?)',
      ],
      [new Error('MySQL did not finish within 3500 ms'), 'MySQL at db.internal:3307 is unreachable (no answer in time)'],
      [
        Object.assign(new Error("Access denied for user 'ops'@'10.0.0.9'"), { code: 'ER_ACCESS_DENIED_ERROR' }),
        'MySQL at db.internal:3307 refused the user in mysql.url (access denied): check the credentials',
      ],
      [
        Object.assign(new Error('x'), { code: 'ER_BAD_DB_ERROR', sqlMessage: "Unknown database 'notice'" }),
        'MySQL at db.internal:3307 has no database notice: run `notice-service migrate` first',
      ],
      [new Error(`Table 'x' doesn't exist\n    at Query.execute (node_modules/mysql2/…)`), "MySQL at db.internal:3307 failed: Table 'x' doesn't exist"],
    ];
    for (const [err, line] of cases) expect(serverProblem('MySQL', url, err)).toBe(line);
    expect(serverProblem('Redis', 'redis://:pw@cache:6380', new Error('WRONGPASS invalid username-password pair'))).toBe(
      'Redis at cache:6380 refused the password in redis.url: check the credentials',
    );
    for (const [err] of cases) expect(serverProblem('MySQL', url, err)).not.toContain('Hunter2secret');
  });
});
