import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { freePort } from './helpers/ports.ts';
import { unary } from './helpers/grpc.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { insertActivityRows } from './helpers/activity.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { INBOX_PROTO } from '../src/channels/inbox/api/inbox-service.ts';

let env: TestEnv | undefined;
let procs: NoticeProcess[] = [];
let client: any;
afterEach(async () => {
  client?.close();
  for (const p of procs) await p.stop();
  await env?.close();
  client = env = undefined;
  procs = [];
});

const unaryCall = (method: string, request: unknown) => unary(client, method, request);
const caller = (user: string) => ({ app_code: 'lalu', user_id: user });

describe('reading inbox items marks the IM conversation read (admin_set_msg_read), off the gRPC path', () => {
  it('several reads in a window are one call at its end, made by deliver, for that user, with the admin as peer; Tencent failures are retried, never returned', async () => {
    const port = await freePort();
    env = await createTestEnv({
      inbox: { enabled: true, api_port: port, im_read_sync: { window: '500ms' } },
      activity_notice_worker: { enabled: true, poll_interval: '50ms' },
    });
    // The API in a process of its own: it only notes who read; the call is deliver's (the API holds no Tencent key).
    procs.push(await startPipeline(env.config, ['inbox-api']));
    let deliver = await startPipeline(env.config, ['ingest', 'deliver']);
    procs.push(deliver);
    const pkg = grpc.loadPackageDefinition(await protoLoader.load(INBOX_PROTO, { keepCase: true, longs: String, defaults: true })) as any;
    client = new pkg.notice.inbox.v1.InboxService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    await insertActivityRows(
      env.owner,
      env.config.activity_database,
      ['73001', '73001', '73001', '73002'].map((user, n) => ({
        event_id: `rs_${n}`,
        event_type: 'SystemNotice',
        user_id: user,
        payload: { title_key: 't', body_key: 'b', n },
        created_at_ms: Date.now(),
      })),
    );
    const items = await waitFor(
      () => unaryCall('ListNotifications', { caller: caller('73001') }),
      (r) => r.notifications.length === 3,
      5_000,
      'three items',
    );
    const ids = items.notifications.map((n: any) => n.id);

    // Deliver stops: reads are noted, and nothing calls Tencent until a deliver process runs again.
    await deliver.stop();
    procs = procs.filter((p) => p !== deliver);
    // Tencent answers the first two calls with a gateway error: the gRPC answers are unaffected.
    env.fakeIm.setReadFaults({ http_errors: 2 });
    await unaryCall('MarkNotificationsRead', { caller: caller('73001'), ids: [ids[0]] });
    await unaryCall('MarkNotificationsRead', { caller: caller('73001'), ids: [ids[1]] });
    await unaryCall('ArchiveNotifications', { caller: caller('73001'), ids: [ids[2]] });
    // Nothing has been called yet: the sync runs after the answers, at the window's end.
    expect(env.fakeIm.getReadStats().requests).toBe(0);
    // Not a read: no sync for 73002.
    await unaryCall('GetUnreadCount', { caller: caller('73002') });
    await new Promise((r) => setTimeout(r, 1000));
    expect(env.fakeIm.getReadStats().requests).toBe(0);
    deliver = await startPipeline(env.config, ['deliver']);
    procs.push(deliver);

    await waitFor(
      async () => env!.fakeIm.readMarksReceived(),
      (marks) => marks.length === 1,
      10_000,
      'the conversation marked read',
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(env.fakeIm.readMarksReceived().map((m) => [m.reportAccount, m.peerAccount])).toEqual([['73001', 'administrator']]);
    // Two refused, the third accepted: retried, and one call per window, not one per read.
    expect(env.fakeIm.getReadStats().requests).toBe(3);
  });

  it('the IM badge agrees with the inbox: reading one of twelve marks read only what was read, never everything', async () => {
    const port = await freePort();
    env = await createTestEnv({
      inbox: { enabled: true, api_port: port, im_read_sync: { window: '300ms' } },
      activity_notice_worker: { enabled: true, poll_interval: '50ms' },
    });
    procs.push(await startPipeline(env.config, ['ingest', 'deliver', 'inbox-api']));
    const pkg = grpc.loadPackageDefinition(await protoLoader.load(INBOX_PROTO, { keepCase: true, longs: String, defaults: true })) as any;
    client = new pkg.notice.inbox.v1.InboxService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const user = '73101';
    const fact = (n: number) => ({
      event_id: `badge_${n}`,
      event_type: 'SystemNotice',
      user_id: user,
      payload: { title_key: 't', body_key: 'b', n },
      created_at_ms: Date.now(),
    });
    const unreadBoth = async () => ({
      im: env!.fakeIm.imUnread(user),
      inbox: (await unaryCall('GetUnreadCount', { caller: caller(user) })).unread.count as number,
    });
    // The oldest notice first, then eleven more after the clock has turned two seconds (Tencent reads whole seconds).
    await insertActivityRows(env.owner, env.config.activity_database, [fact(0)]);
    await waitFor(unreadBoth, (u) => u.im === 1 && u.inbox === 1, 15_000, 'the first notice in IM and the inbox');
    await new Promise((r) => setTimeout(r, 2000 - (Date.now() % 1000) + 100));
    await insertActivityRows(
      env.owner,
      env.config.activity_database,
      Array.from({ length: 11 }, (_, n) => fact(n + 1)),
    );
    await waitFor(unreadBoth, (u) => u.im === 12 && u.inbox === 12, 15_000, 'twelve unread in both');
    const listed = await unaryCall('ListNotifications', { caller: caller(user), page_size: 20 });
    const ids: string[] = listed.notifications.map((n: any) => n.id);
    // The user reads the oldest one: IM shows 11, like the inbox (before: MsgReadTime absent, IM dropped to 0).
    await unaryCall('MarkNotificationsRead', { caller: caller(user), ids: [ids.at(-1)] });
    await waitFor(
      async () => env!.fakeIm.readMarksReceived().length,
      (n) => n >= 1,
      15_000,
      'the read sync',
    );
    expect(env.fakeIm.readMarksReceived()[0]).toMatchObject({ reportAccount: user, peerAccount: 'administrator' });
    expect(await unreadBoth()).toEqual({ im: 11, inbox: 11 });
    // Then the newest one (reads not a prefix): only the prefix is marked, so IM never shows fewer than the inbox.
    await unaryCall('MarkNotificationsRead', { caller: caller(user), ids: [ids[0]] });
    await waitFor(
      async () => env!.fakeIm.readMarksReceived().length,
      (n) => n >= 2,
      15_000,
      'the second read sync',
    );
    const after = await unreadBoth();
    expect(after.inbox).toBe(10);
    expect(after.im).toBeGreaterThanOrEqual(after.inbox);
    // Everything read: both at 0.
    await unaryCall('MarkAllNotificationsRead', { caller: caller(user) });
    await waitFor(unreadBoth, (u) => u.im === 0 && u.inbox === 0, 15_000, 'all read in both');
  });
});
