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
});
