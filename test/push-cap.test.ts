import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { insertActivityRows, type ActivityRow } from './helpers/activity.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { insertRoomRows, kick } from './helpers/room.ts';

let env: TestEnv | undefined;
let procs: NoticeProcess[] = [];
afterEach(async () => {
  for (const p of procs) await p.stop();
  await env?.close();
  procs = [];
  env = undefined;
});

const notices = (from: number, n: number): ActivityRow[] =>
  Array.from({ length: n }, (_, i) => ({
    event_id: `cap_${from + i}`,
    event_type: 'SystemNotice',
    user_id: '60001',
    payload: { title_key: `t${from + i}`, body_key: 'b' },
    created_at_ms: Date.now(),
  }));

const counts = async (e: TestEnv) =>
  Object.fromEntries(
    (
      await e.notice.query<any[]>(
        'SELECT CONCAT(channel, ":", status, ":", COALESCE(last_error_code, "")) AS k, COUNT(*) AS n FROM notice_delivery_events GROUP BY k',
      )
    )[0].map((r) => [r.k, Number(r.n)]),
  );

describe('per-user push cap (tencent_push.frequency_cap)', () => {
  it('mandatory pushes (three kicks) are not counted: the next three activity pushes still go, the fourth is capped', async () => {
    env = await createTestEnv({
      tencent_push: { enabled: true, batch_linger: '0ms', kinds: ['activity_notice', 'room_notice'], frequency_cap: [{ max: 3, per: '1h' }] },
      activity_notice_worker: { enabled: true, poll_interval: '50ms' },
      room_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s' },
    });
    const user = '60002';
    await insertRoomRows(
      env.owner,
      env.config.room_database,
      [1, 2, 3].map((n) => kick(n, { target_user_id: user })),
    );
    procs.push(await startPipeline(env.config, ['ingest', 'deliver']));
    await waitFor(
      () => counts(env!),
      (c) => c['tencent_push:delivered:'] === 3,
      30_000,
      'three kick pushes',
    );
    const mine = (from: number, n: number) => notices(from, n).map((r) => ({ ...r, user_id: user }));
    await insertActivityRows(env.owner, env.config.activity_database, mine(100, 3));
    const three = await waitFor(
      () => counts(env!),
      (c) => (c['tencent_push:delivered:'] ?? 0) + (c['tencent_push:suppressed:FREQUENCY_CAP'] ?? 0) === 6,
      30_000,
      'the three activity pushes final',
    );
    expect(three).toMatchObject({ 'tencent_push:delivered:': 6 });
    await insertActivityRows(env.owner, env.config.activity_database, mine(200, 1));
    const fourth = await waitFor(
      () => counts(env!),
      (c) => (c['tencent_push:delivered:'] ?? 0) + (c['tencent_push:suppressed:FREQUENCY_CAP'] ?? 0) === 7,
      30_000,
      'the fourth final',
    );
    expect(fourth).toMatchObject({ 'tencent_push:delivered:': 6, 'tencent_push:suppressed:FREQUENCY_CAP': 1 });
  });

  it('50 notices in minutes, cap 3/h, three deliver processes: exactly 3 pushes, 47 held back, every inbox item and message; after Redis loses the window, still 3', async () => {
    env = await createTestEnv({
      tencent_push: {
        enabled: true,
        batch_linger: '0ms',
        kinds: ['activity_notice'],
        frequency_cap: [
          { max: 3, per: '1h' },
          { max: 10, per: '24h' },
        ],
      },
      inbox: { enabled: true },
      activity_notice_worker: { enabled: true, poll_interval: '50ms' },
    });
    await insertActivityRows(env.owner, env.config.activity_database, notices(1, 50));
    procs.push(
      await startPipeline(env.config, ['ingest', 'deliver']),
      await startPipeline(env.config, ['deliver']),
      await startPipeline(env.config, ['deliver']),
    );
    const first = await waitFor(
      () => counts(env!),
      (c) =>
        (c['tencent_push:delivered:'] ?? 0) + (c['tencent_push:suppressed:FREQUENCY_CAP'] ?? 0) === 50 &&
        c['inbox:delivered:'] === 50 &&
        c['tencent_im_c2c:delivered:'] === 50,
      20_000,
      'every row final',
    );
    expect(first).toMatchObject({ 'tencent_push:delivered:': 3, 'tencent_push:suppressed:FREQUENCY_CAP': 47 });
    expect(env.fakeIm.pushes().filter((p) => !p.duplicate && p.accounts.includes('60001'))).toHaveLength(3);

    // Redis loses the user's window (a partial loss): it is counted again from the ledger, so nothing more goes out.
    const lost = await env.redis.keys(`{${env.id}}:cap:*`);
    expect(lost.length).toBeGreaterThan(0);
    await env.redis.del(...lost);
    await insertActivityRows(env.owner, env.config.activity_database, notices(51, 10));
    const after = await waitFor(
      () => counts(env!),
      (c) => (c['tencent_push:delivered:'] ?? 0) + (c['tencent_push:suppressed:FREQUENCY_CAP'] ?? 0) === 60 && c['inbox:delivered:'] === 60,
      20_000,
      'the later rows final',
    );
    expect(after).toMatchObject({ 'tencent_push:delivered:': 3, 'tencent_push:suppressed:FREQUENCY_CAP': 57 });
    expect(env.fakeIm.pushes().filter((p) => !p.duplicate && p.accounts.includes('60001'))).toHaveLength(3);
  });
});

describe('push cap after Redis loses the window while a push is admitted but not yet sent', () => {
  it('counts the push in flight: cap 3, the 3rd push lingering when the window is lost, a 4th is held back', async () => {
    env = await createTestEnv({
      tencent_push: {
        enabled: true,
        // The 3rd push waits this long for company after admission, before the ledger marks it as going out.
        batch_linger: '3s',
        kinds: ['activity_notice'],
        frequency_cap: [{ max: 3, per: '1h' }],
      },
      activity_notice_worker: { enabled: true, poll_interval: '50ms' },
    });
    procs.push(await startPipeline(env.config, ['ingest', 'deliver']));
    const pushRows = (e: TestEnv) =>
      e.notice
        .query<any[]>("SELECT CAST(source_event_id AS CHAR) AS id, status, provider_ref FROM notice_delivery_events WHERE channel = 'tencent_push' ORDER BY id")
        .then(([rows]) => rows);
    await insertActivityRows(env.owner, env.config.activity_database, notices(1, 2));
    await waitFor(
      () => pushRows(env!),
      (rows) => rows.filter((r) => r.status === 'delivered').length === 2,
      20_000,
      'two pushes sent',
    );

    await insertActivityRows(env.owner, env.config.activity_database, notices(3, 1));
    const capKey = `{${env.id}}:cap:tencent_push:`;
    // Admitted (three sends in the window) and lingering: claimed, not yet marked with its request's reference.
    await waitFor(
      async () => ({
        rows: await pushRows(env!),
        window: await env!.redis.keys(`${capKey}*`).then((k) => (k[0] ? env!.redis.zcount(k[0], 1, '+inf') : 0)),
      }),
      (s) => s.window === 3 && s.rows.some((r) => r.id === 'cap_3' && r.status === 'delivering' && r.provider_ref === null),
      10_000,
      'the 3rd push admitted and lingering',
    );
    await env.redis.del(...(await env.redis.keys(`${capKey}*`)));
    await insertActivityRows(env.owner, env.config.activity_database, notices(4, 1));
    const rows = await waitFor(
      () => pushRows(env!),
      (r) => r.length === 4 && r.every((x) => ['delivered', 'suppressed'].includes(x.status)),
      20_000,
      'all four final',
    );
    expect(rows.map((r) => `${r.id}:${r.status}`)).toEqual(['cap_1:delivered', 'cap_2:delivered', 'cap_3:delivered', 'cap_4:suppressed']);
    expect(env.fakeIm.pushes().filter((p) => !p.duplicate && p.accounts.includes('60001'))).toHaveLength(3);
  });
});

describe('push cap after Redis loses part of a window or rolls back', () => {
  it('the window without its mark, or an older snapshot of it, never lets a 4th push out under a cap of 3', async () => {
    env = await createTestEnv({
      tencent_push: { enabled: true, batch_linger: '0ms', kinds: ['activity_notice'], frequency_cap: [{ max: 3, per: '1h' }] },
      activity_notice_worker: { enabled: true, poll_interval: '50ms' },
    });
    procs.push(await startPipeline(env.config, ['ingest', 'deliver']));
    const pushed = () => env!.fakeIm.pushes().filter((p) => !p.duplicate && p.accounts.includes('60001')).length;
    const settled = (n: number) =>
      waitFor(
        () => counts(env!),
        (c) => (c['tencent_push:delivered:'] ?? 0) + (c['tencent_push:suppressed:FREQUENCY_CAP'] ?? 0) === n,
        20_000,
        `${n} push rows final`,
      );
    await insertActivityRows(env.owner, env.config.activity_database, notices(1, 1));
    await settled(1);
    const [key] = await env.redis.keys(`{${env.id}}:cap:*`);
    // A rolled-back snapshot: the window as it was after one send, restored after two more went out.
    const snapshot = await env.redis.dumpBuffer(key!);
    await insertActivityRows(env.owner, env.config.activity_database, notices(2, 2));
    await settled(3);
    await env.redis.restore(key!, 0, snapshot!, 'REPLACE');
    await insertActivityRows(env.owner, env.config.activity_database, notices(4, 1));
    await settled(4);
    expect(pushed()).toBe(3);
    // Half of it lost: the sends go, the rest of the key stays (the mark lives in the same key, so it goes too).
    await env.redis.zremrangebyscore(key!, 1, '+inf');
    await insertActivityRows(env.owner, env.config.activity_database, notices(5, 1));
    await settled(5);
    expect(pushed()).toBe(3);
    expect(await counts(env)).toMatchObject({ 'tencent_push:delivered:': 3, 'tencent_push:suppressed:FREQUENCY_CAP': 2 });
  });
});
