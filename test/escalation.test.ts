import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { freePort } from './helpers/ports.ts';
import { unary } from './helpers/grpc.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { insertActivityRows, type ActivityRow } from './helpers/activity.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { INBOX_PROTO } from '../src/channels/inbox/api/inbox-service.ts';
import { parseConfigText } from '../src/composition/load.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let inbox: any;
afterEach(async () => {
  inbox?.close();
  await proc?.stop();
  await env?.close();
  inbox = proc = env = undefined;
});

const call = (method: string, request: unknown) => unary(inbox, method, request);
const notice = (n: number, user: string, committedAtMs: number): ActivityRow => ({
  event_id: `esc_${n}`,
  event_type: 'SystemNotice',
  user_id: user,
  payload: { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body' },
  created_at_ms: committedAtMs,
});
const pushRows = async (e: TestEnv) =>
  Object.fromEntries(
    (
      await e.notice.query<any[]>(
        "SELECT CAST(source_event_id AS CHAR) AS id, status, last_error FROM notice_delivery_events WHERE channel = 'tencent_push' ORDER BY id",
      )
    )[0].map((r) => [r.id, r.status]),
  );

describe('push only if the inbox item is still unread (tencent_push.escalate_after)', () => {
  it('read, archived or deleted within the wait: no push (skipped_read); still unread: one push at commit + 3 s', async () => {
    const apiPort = await freePort();
    env = await createTestEnv({
      inbox: { enabled: true, api_port: apiPort },
      tencent_push: { enabled: true, batch_linger: '0ms', kinds: ['activity_notice'], escalate_after: { activity_notice: '3s' } },
      activity_notice_worker: { enabled: true, poll_interval: '50ms' },
    });
    proc = await startPipeline(env.config, ['ingest', 'deliver', 'inbox-api']);
    const pkg = grpc.loadPackageDefinition(await protoLoader.load(INBOX_PROTO, { keepCase: true, longs: String, defaults: true })) as any;
    inbox = new pkg.notice.inbox.v1.InboxService(`127.0.0.1:${apiPort}`, grpc.credentials.createInsecure());
    const committed = Date.now();
    const users = ['40001', '40002', '40003', '40004'];
    await insertActivityRows(
      env.owner,
      env.config.activity_database,
      users.map((u, i) => notice(i + 1, u, committed)),
    );
    await waitFor(
      () => pushRows(env!),
      (rows) => Object.values(rows).filter((s) => s === 'deferred').length === 4,
      5_000,
      'four pushes waiting',
    );
    // Three users open their inbox in time: one reads, one archives, one deletes; the fourth does nothing.
    const idOf = async (user: string) => (await call('ListNotifications', { caller: { app_code: 'lalu', user_id: user } })).notifications[0].id;
    await call('MarkNotificationsRead', { caller: { app_code: 'lalu', user_id: '40001' }, ids: [await idOf('40001')] });
    await call('ArchiveNotifications', { caller: { app_code: 'lalu', user_id: '40002' }, ids: [await idOf('40002')] });
    await call('DeleteNotifications', { caller: { app_code: 'lalu', user_id: '40003' }, ids: [await idOf('40003')] });
    expect(Date.now() - committed).toBeLessThan(3000);
    expect(env.fakeIm.pushes()).toHaveLength(0);

    const rows = await waitFor(
      () => pushRows(env!),
      (r) => Object.values(r).every((s) => s === 'delivered' || s === 'skipped_read'),
      10_000,
      'every push decided',
    );
    expect(rows).toEqual({ esc_1: 'skipped_read', esc_2: 'skipped_read', esc_3: 'skipped_read', esc_4: 'delivered' });
    const pushes = env.fakeIm.pushes();
    expect(pushes.flatMap((p) => p.accounts)).toEqual(['40004']);
    // At T + N, within the issue's ± 5 s (the delayed job fires at the moment).
    expect(pushes[0]!.receivedAtMs - committed).toBeGreaterThanOrEqual(3000);
    expect(pushes[0]!.receivedAtMs - committed).toBeLessThan(5000);
    const [why] = await env.notice.query<any[]>(
      "SELECT last_error_code, last_error FROM notice_delivery_events WHERE channel = 'tencent_push' AND status = 'skipped_read'",
    );
    expect(why.map((w) => w.last_error_code)).toEqual(['READ', 'READ', 'READ']);
    expect(why.map((w) => w.last_error).sort()).toEqual([
      'the inbox item was deleted before escalate_after',
      'the inbox item was read (or archived) before escalate_after',
      'the inbox item was read (or archived) before escalate_after',
    ]);
  });

  it('refuses an escalate_after for a kind the inbox does not take', () => {
    expect(() =>
      parseConfigText(
        'mysql: {url: "mysql://root@127.0.0.1:3306/n"}\nredis: {url: "redis://127.0.0.1:6379"}\ninbox: {enabled: true, kinds: [room_notice]}\ntencent_push: {escalate_after: {activity_notice: 5m}}\n',
        'notice.yaml',
        {},
      ),
    ).toThrow(/tencent_push\.escalate_after\.activity_notice: the inbox does not take activity_notice/);
  });
});
