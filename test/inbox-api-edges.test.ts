import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './helpers/env.ts';
import { freePort } from './helpers/ports.ts';
import { refusal, unary } from './helpers/grpc.ts';
import { startPipeline } from './helpers/pipeline.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { InboxStore } from '../src/channels/inbox/store.ts';
import { INBOX_PROTO } from '../src/channels/inbox/api/inbox-service.ts';
import { inboxModule } from '../src/channels/inbox/module.ts';
import { revokeCommand } from '../src/ops/cli-ops.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
let client: any;
afterEach(async () => {
  client?.close();
  await proc?.stop();
  await env?.close();
  proc = env = client = undefined;
});

const caller = (user: string) => ({ app_code: 'lalu', user_id: user });

async function api(): Promise<any> {
  const port = await freePort();
  env = await createTestEnv({ inbox: { enabled: true, api_port: port } });
  proc = await startPipeline(env.config, ['inbox-api']);
  const v1 = (grpc.loadPackageDefinition(await protoLoader.load(INBOX_PROTO, { keepCase: true, longs: String, defaults: true, oneofs: true })) as any).notice
    .inbox.v1;
  client = new v1.InboxService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return client;
}

async function addItem(user: string, n: number): Promise<string> {
  const ids = await new InboxStore(env!.notice).insert([
    {
      appCode: 'lalu',
      userId: user,
      fact: { sourceName: 'activity_outbox', appCode: 'lalu', sourceEventId: `edge_${user}_${n}` },
      noticeKind: 'activity_notice',
      eventType: 'SystemNotice',
      payload: '{}',
      createdAtMs: Date.now(),
      expireAtMs: null,
    },
  ]);
  return [...ids.values()][0]!;
}

describe('inbox API and CLI edges (issue 44, F25)', () => {
  it('ids beyond BIGINT UNSIGNED are INVALID_ARGUMENT, not UNAVAILABLE ("retry")', async () => {
    const c = await api();
    const beyond = '18446744073709551616';
    for (const [method, request] of [
      ['MarkSeen', { caller: caller('56001'), up_to_id: beyond }],
      ['MarkAllNotificationsRead', { caller: caller('56001'), up_to_id: beyond }],
      ['MarkNotificationsRead', { caller: caller('56001'), ids: [beyond] }],
      ['DeleteNotifications', { caller: caller('56001'), ids: ['99999999999999999999'] }],
    ] as const) {
      const err = await refusal(c, method, request);
      expect(err.code, method).toBe(grpc.status.INVALID_ARGUMENT);
      expect(err.details).toMatch(/2\^64-1/);
    }
    // The largest legal id is a question with an answer: no such item of this caller's.
    expect((await refusal(c, 'MarkNotificationsRead', { caller: caller('56001'), ids: ['18446744073709551615'] })).code).toBe(grpc.status.NOT_FOUND);
  });

  it('MarkSeen is bounded by the caller’s own newest item: items that arrive later are unseen', async () => {
    const c = await api();
    await addItem('56002', 1);
    await unary(c, 'MarkSeen', { caller: caller('56002'), up_to_id: '9000000000000' });
    await addItem('56002', 2);
    const after = await unary(c, 'GetUnreadCount', { caller: caller('56002') });
    expect(after.unread).toMatchObject({ count: 2, unseen: 1 });
    // Nothing of someone else's counts either: a user with no items marks nothing.
    await unary(c, 'MarkSeen', { caller: caller('56003'), up_to_id: '9000000000000' });
    await addItem('56003', 1);
    expect((await unary(c, 'GetUnreadCount', { caller: caller('56003') })).unread).toMatchObject({ count: 1, unseen: 1 });
  });

  it('revoke refuses an event id the ledger cannot hold, naming the limit, instead of cutting it and waiting forever', async () => {
    env = await createTestEnv();
    await expect(revokeCommand(env.config, { eventId: 'x'.repeat(800), source: 'activity_outbox', app: 'lalu', waitMs: 0 })).rejects.toThrow(
      /event_id is 800 characters; the limit is \d+/,
    );
    const [rows] = await env.notice.query<any[]>('SELECT COUNT(*) AS n FROM notice_revocations');
    expect(Number(rows[0].n)).toBe(0);
  });

  it('config check names the random port of api_port: 0 instead of calling the API off', async () => {
    env = await createTestEnv({ inbox: { enabled: true, api_port: 0 } });
    const lines = await inboxModule.listeners!(env.config);
    expect(lines.join('\n')).toMatch(/a free port picked at start/);
    expect(lines.join('\n')).not.toMatch(/inbox API off/);
  });
});
