import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { insertActivityRows, type ActivityRow } from './helpers/activity.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
afterEach(async () => {
  await proc?.stop();
  await env?.close();
  proc = env = undefined;
});

const reward = (n: number, user: string): ActivityRow => ({
  event_id: `dg_${user}_${n}`,
  event_type: 'ActivityRewardGranted',
  user_id: user,
  payload: { activity_id: 'act_spring', grant_id: `g${n}`, reward_items: [{ resource_id: 101, count: n }] },
  created_at_ms: Date.now(),
});
const pushStatuses = async (e: TestEnv) =>
  Object.fromEntries(
    (
      await e.notice.query<any[]>(
        "SELECT CONCAT(CAST(user_id AS CHAR), ':', status) AS k, COUNT(*) AS n FROM notice_delivery_events WHERE channel = 'tencent_push' GROUP BY k",
      )
    )[0].map((r) => [r.k, Number(r.n)]),
  );

async function world(digest: Record<string, unknown>): Promise<void> {
  env = await createTestEnv({
    inbox: { enabled: true },
    tencent_push: { enabled: true, batch_linger: '0ms', kinds: ['activity_notice'], digest: { activity_notice: digest } },
    activity_notice_worker: { enabled: true, poll_interval: '50ms' },
    reconciler: { interval: '500ms', pending_grace: '1s' },
  });
  proc = await startPipeline(env.config, ['ingest', 'deliver']);
}

describe('digests of bursts (tencent_push.digest)', () => {
  it('20 rewards to one user and 10 to another within the window: one summary push each with the count, every inbox item and message', async () => {
    await world({ window: '3s' });
    const first = Date.now();
    for (let n = 1; n <= 20; n++) {
      await insertActivityRows(env!.owner, env!.config.activity_database, [reward(n, '50001'), ...(n <= 10 ? [reward(n, '50002')] : [])]);
      await new Promise((r) => setTimeout(r, 50));
    }
    const rows = await waitFor(
      () => pushStatuses(env!),
      (c) => c['50001:delivered'] === 1 && c['50002:delivered'] === 1,
      15_000,
      'one summary per user',
    );
    expect(rows).toEqual({ '50001:delivered': 1, '50001:digested': 19, '50002:delivered': 1, '50002:digested': 9 });
    const pushes = env!.fakeIm.pushes();
    expect(pushes).toHaveLength(2);
    const of = (user: string) => pushes.find((p) => p.accounts.includes(user))!;
    expect(JSON.parse(of('50001').offlinePush.Ext as string)).toMatchObject({ digest_count: 20 });
    expect(of('50001').offlinePush.Title).toMatch(/^\(20\) /);
    expect(JSON.parse(of('50002').offlinePush.Ext as string)).toMatchObject({ digest_count: 10 });
    // The summary leaves when the window closes (3 s after the first fact's turn), well within window + 3 s.
    expect(of('50001').receivedAtMs - first).toBeLessThan(6000);
    const [[items]] = (await env!.notice.query<any[]>('SELECT COUNT(*) AS n FROM notice_inbox_items')) as any;
    expect(Number(items.n)).toBe(30);
    expect(env!.fakeIm.messages()).toHaveLength(30);
  });

  it('first_at_once: the first goes at once, the rest of the window as one summary; a later burst opens a new window', async () => {
    await world({ window: '2s', first_at_once: true });
    await insertActivityRows(env!.owner, env!.config.activity_database, [reward(1, '50003')]);
    await waitFor(
      () => pushStatuses(env!),
      (c) => c['50003:delivered'] === 1,
      5_000,
      'the first at once',
    );
    await insertActivityRows(
      env!.owner,
      env!.config.activity_database,
      [2, 3, 4, 5].map((n) => reward(n, '50003')),
    );
    await waitFor(
      () => pushStatuses(env!),
      (c) => c['50003:delivered'] === 2,
      10_000,
      'the summary',
    );
    expect(env!.fakeIm.pushes().map((p) => JSON.parse(p.offlinePush.Ext as string).digest_count)).toEqual([undefined, 4]);
    // After the window: a new one, its first again at once.
    await new Promise((r) => setTimeout(r, 2200));
    await insertActivityRows(env!.owner, env!.config.activity_database, [reward(6, '50003')]);
    await waitFor(
      () => pushStatuses(env!),
      (c) => c['50003:delivered'] === 3,
      5_000,
      'the next window opens at once',
    );
    expect(await pushStatuses(env!)).toEqual({ '50003:delivered': 3, '50003:digested': 3 });
  });

  it('Redis loses the waiting leader: the reconciler brings it back and the window still yields exactly one summary with the right count', async () => {
    await world({ window: '2s' });
    await insertActivityRows(
      env!.owner,
      env!.config.activity_database,
      [1, 2, 3, 4, 5, 6].map((n) => reward(n, '50004')),
    );
    await waitFor(
      () => pushStatuses(env!),
      (c) => c['50004:deferred'] === 1 && c['50004:digested'] === 5,
      5_000,
      'a leader waiting',
    );
    await env!.redis.del(...(await env!.redis.keys(`{${env!.id}}*`)));
    await waitFor(
      () => pushStatuses(env!),
      (c) => c['50004:delivered'] === 1,
      15_000,
      'the summary',
    );
    await new Promise((r) => setTimeout(r, 1500));
    const pushes = env!.fakeIm.pushes().filter((p) => !p.duplicate);
    expect(pushes.map((p) => JSON.parse(p.offlinePush.Ext as string).digest_count)).toEqual([6]);
  });
});
