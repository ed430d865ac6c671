import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { insertActivityRows, type ActivityRow } from './helpers/activity.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { balanceChanged, insertWalletRows, vipActivated } from './helpers/outbox.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { offlineStorage } from '../src/channels/tencent-push/channel.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
afterEach(async () => {
  await proc?.stop();
  await env?.close();
  proc = env = undefined;
});

/** A system notice (an activity_notice: C2C and the inbox) to `user`. */
const systemNotice = (n: number, user: string): ActivityRow => ({
  event_id: `exp_${n}`,
  event_type: 'SystemNotice',
  user_id: user,
  payload: { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body', params: { minutes: 30 } },
});

const statuses = async (e: TestEnv) =>
  Object.fromEntries(
    (await e.notice.query<any[]>('SELECT CONCAT(channel, ":", status) AS k, COUNT(*) AS n FROM notice_delivery_events GROUP BY k'))[0].map((r) => [
      r.k,
      Number(r.n),
    ]),
  );

describe('expiry per notice kind (deliver.expire_after)', () => {
  it('after a provider outage longer than the limit nothing older than the limit is sent; the inbox keeps them; fresh ones go with their remaining life', async () => {
    env = await createTestEnv({
      // Retries outlast the outage, so the rows are still in flight when Tencent is back.
      activity_notice_worker: { enabled: true, poll_interval: '50ms', max_retry_count: 30 },
      wallet_notice_worker: { enabled: false },
      inbox: { enabled: true },
      deliver: { expire_after: { activity_notice: '3s' }, retry_base_delay: '300ms', retry_max_delay: '600ms' },
    });
    // Tencent refuses everything for longer than the notices' life.
    env.fakeIm.setFaults({ http_errors: 1_000_000 });
    const committed = Date.now();
    await insertActivityRows(
      env.owner,
      env.config.activity_database,
      Array.from({ length: 10 }, (_, i) => ({ ...systemNotice(i + 1, String(60000 + i)), created_at_ms: committed })),
    );
    proc = await startPipeline(env.config);
    await waitFor(
      () => statuses(env!),
      (c) => c['inbox:delivered'] === 10,
      10_000,
      'the inbox items (the inbox is not out)',
    );
    await new Promise((r) => setTimeout(r, 3500));
    env.fakeIm.setFaults({});
    await waitFor(
      () => statuses(env!),
      (c) => c['tencent_im_c2c:expired'] === 10,
      15_000,
      'every C2C row expired',
    );
    // Nothing older than the limit reached Tencent; the history says why.
    expect(env.fakeIm.messages()).toHaveLength(0);
    const [rows] = await env.notice.query<any[]>("SELECT last_error_code, last_error FROM notice_delivery_events WHERE channel = 'tencent_im_c2c'");
    expect(rows.every((r) => r.last_error_code === 'EXPIRED' && /past activity_notice's expire_after \(3 s\)/.test(r.last_error))).toBe(true);
    const metrics = await proc.metrics.registry.metrics();
    expect(metrics).toMatch(
      /notice_deliveries_total\{source="activity_outbox",channel="tencent_im_c2c",notice_kind="activity_notice",outcome="expired",error_code=""\} 10/,
    );

    // A fresh notice goes, and Tencent keeps it for an offline user no longer than it has left (≤ 3 s).
    await insertActivityRows(env.owner, env.config.activity_database, [{ ...systemNotice(50, '60050'), created_at_ms: Date.now() }]);
    await waitFor(
      () => statuses(env!),
      (c) => c['tencent_im_c2c:delivered'] === 1,
      10_000,
      'the fresh notice delivered',
    );
    const [sent] = env.fakeIm.messages();
    expect(sent!.msgLifeTime).toBeGreaterThanOrEqual(1);
    expect(sent!.msgLifeTime).toBeLessThanOrEqual(3);
  });

  it('inbox.drop_expired keeps expired notices of a kind out of the inbox too; kinds without a limit never expire', async () => {
    env = await createTestEnv({
      activity_notice_worker: { enabled: true, poll_interval: '50ms' },
      inbox: { enabled: true, drop_expired: ['activity_notice'] },
      deliver: { expire_after: { activity_notice: '1s' } },
    });
    // A balance committed in 2024 (the fixture's time): wallet_notice has no limit, so it is still sent.
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1)]);
    // Committed an hour ago (an owner's backlog): past the limit on every channel that does not keep history.
    await insertActivityRows(env.owner, env.config.activity_database, [{ ...systemNotice(1, '61000'), created_at_ms: Date.now() - 3_600_000 }]);
    proc = await startPipeline(env.config);
    await waitFor(
      () => statuses(env!),
      (c) => c['inbox:expired'] === 1 && c['tencent_im_c2c:expired'] === 1 && c['tencent_im_c2c:delivered'] === 1,
      10_000,
      'both channels of the old activity expired, the old balance delivered',
    );
    const [items] = await env.notice.query<any[]>('SELECT COUNT(*) AS n FROM notice_inbox_items');
    expect(Number(items[0].n)).toBe(0);
    expect(env.fakeIm.messages().map((m) => m.ext)).toEqual(['wallet_notice']);
  });

  it("a push's offline storage never outlives the notice: OfflineStorageTime is the life it has left; without a limit, none", async () => {
    env = await createTestEnv({
      activity_notice_worker: { enabled: true, poll_interval: '50ms' },
      tencent_push: { enabled: true, batch_linger: '0ms', kinds: ['activity_notice', 'vip_notice'] },
      deliver: { expire_after: { activity_notice: '2m' } },
    });
    const now = Date.now();
    await insertActivityRows(env.owner, env.config.activity_database, [
      { ...systemNotice(1, '61001'), created_at_ms: now },
      // Committed a minute ago: a minute left (another event type, so another push text and its own call).
      {
        event_id: 'exp_2',
        event_type: 'TaskCompleted',
        user_id: '61002',
        payload: { task_id: 'task_daily', progress: 5, target: 5 },
        created_at_ms: now - 60_000,
      },
    ]);
    // vip_notice has no limit: Tencent's default storage.
    await insertWalletRows(env.owner, env.config.wallet_database, [{ ...vipActivated(1), user_id: '61003' }]);
    proc = await startPipeline(env.config);
    await waitFor(
      () => statuses(env!),
      (c) => c['tencent_push:delivered'] === 3,
      10_000,
      'three pushes',
    );
    const storage = Object.fromEntries(env.fakeIm.pushes().map((p) => [p.accounts[0], p.offlineStorageTime]));
    expect(storage['61001']).toBeGreaterThanOrEqual(110);
    expect(storage['61001']).toBeLessThanOrEqual(120);
    expect(storage['61002']).toBeGreaterThanOrEqual(50);
    expect(storage['61002']).toBeLessThanOrEqual(60);
    expect(storage['61003']).toBeUndefined();
  });

  it('one call carrying notices with different lives is stored for the shortest (whole seconds, at least 1)', () => {
    expect(offlineStorage([{ expiresAtMs: null }, { expiresAtMs: null }], 0)).toEqual({});
    expect(offlineStorage([{ expiresAtMs: 120_500 }, { expiresAtMs: null }, { expiresAtMs: 60_900 }], 0)).toEqual({ offlineStorageSeconds: 60 });
    expect(offlineStorage([{ expiresAtMs: 1_000 }], 999)).toEqual({ offlineStorageSeconds: 1 });
  });
});
