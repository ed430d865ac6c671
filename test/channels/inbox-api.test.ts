import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from '../helpers/env.ts';
import { freePort } from '../helpers/ports.ts';
import { startPipeline } from '../helpers/pipeline.ts';
import type { NoticeProcess } from '../../cli/run-roles.ts';
import { INBOX_PROTO } from '../../src/channels/inbox/api/inbox-service.ts';
import { InboxStore } from '../../src/channels/inbox/store.ts';

let env: TestEnv;
let proc: NoticeProcess;
let client: any;
let store: InboxStore;
let seq = 0;

const call = (method: string, req: object): Promise<any> =>
  new Promise((resolve, reject) => client[method](req, (err: grpc.ServiceError | null, res: any) => (err ? reject(err) : resolve(res))));
const fails = async (method: string, req: object) => {
  try {
    await call(method, req);
  } catch (err) {
    return { code: (err as grpc.ServiceError).code, details: (err as grpc.ServiceError).details };
  }
  throw new Error(`${method} succeeded`);
};
const alice = { app_code: 'lalu', user_id: '10001' };
const bob = { app_code: 'lalu', user_id: '10002' };
const add = (user: string, n: number, kind = 'activity_notice') =>
  store.insert(
    Array.from({ length: n }, () => ({
      appCode: 'lalu',
      userId: user,
      fact: { sourceName: 't', appCode: 'lalu', sourceEventId: `e${++seq}` },
      noticeKind: kind,
      eventType: 'SystemNotice',
      payload: `{"n":${seq}}`,
      createdAtMs: Date.now(),
      expireAtMs: null,
    })),
  );

beforeAll(async () => {
  const apiPort = await freePort();
  env = await createTestEnv({ inbox: { enabled: true, page_token_secret: 'test-token-secret', api_port: apiPort } });
  proc = await startPipeline(env.config, ['deliver', 'inbox-api']);
  store = new InboxStore(env.notice);
  const pkg = grpc.loadPackageDefinition(await protoLoader.load(INBOX_PROTO, { keepCase: true, longs: String, enums: String, defaults: true })) as any;
  client = new pkg.notice.inbox.v1.InboxService(`127.0.0.1:${apiPort}`, grpc.credentials.createInsecure());
  address = `127.0.0.1:${apiPort}`;
});
let address = '';

afterAll(async () => {
  client?.close();
  await proc?.stop();
  await env?.close();
});

describe('notice.inbox.v1.InboxService over a real gRPC client', () => {
  it('answers server reflection, so grpcurl needs no proto: it lists the service and describes its file', async () => {
    const proto = new URL('../../node_modules/@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto', import.meta.url).pathname;
    const pkg = grpc.loadPackageDefinition(await protoLoader.load(proto, { keepCase: true, longs: String, defaults: true, oneofs: true })) as any;
    const reflection = new pkg.grpc.reflection.v1.ServerReflection(address, grpc.credentials.createInsecure());
    const ask = (request: Record<string, unknown>) =>
      new Promise<any>((resolve, reject) => {
        const call = reflection.ServerReflectionInfo();
        call.on('data', (answer: unknown) => {
          resolve(answer);
          call.end();
        });
        call.on('error', reject);
        call.write(request);
      });
    const listed = await ask({ list_services: '' });
    expect(listed.list_services_response.service.map((s: { name: string }) => s.name)).toContain('notice.inbox.v1.InboxService');
    const described = await ask({ file_containing_symbol: 'notice.inbox.v1.InboxService' });
    expect(described.file_descriptor_response.file_descriptor_proto.length).toBeGreaterThan(0);
    reflection.close();
  });

  it('pages newest first without duplicates or skips while new items arrive; counts follow every change; another user sees nothing of it', async () => {
    await add('10001', 45);
    await add('10002', 3, 'room_notice');
    const seen: string[] = [];
    let token = '';
    let page = 0;
    do {
      const res = await call('ListNotifications', { caller: alice, page_size: 10, page_token: token });
      seen.push(...res.notifications.map((n: any) => n.id));
      token = res.next_page_token;
      if (page++ === 1) await add('10001', 5); // arrive mid-paging: newer than page 1, so never inside the pages still to come
    } while (token);
    expect(seen).toHaveLength(45);
    expect(new Set(seen).size).toBe(45);
    expect([...seen].sort((a, b) => Number(b) - Number(a))).toEqual(seen);

    let unread = (await call('GetUnreadCount', { caller: alice })).unread;
    expect(unread).toMatchObject({ count: 50, capped: false, by_kind: { activity_notice: 50 } });
    const first = (await call('ListNotifications', { caller: alice, page_size: 3 })).notifications.map((n: any) => n.id);
    expect((await call('MarkNotificationsRead', { caller: alice, ids: first })).unread.count).toBe(47);
    expect((await call('ArchiveNotifications', { caller: alice, ids: [first[0]] })).updated_count).toBe(1);
    expect((await call('MarkNotificationsUnread', { caller: alice, ids: [first[1]] })).unread.count).toBe(48);
    const archived = await call('ListNotifications', { caller: alice, archived: 'ARCHIVE_FILTER_ONLY' });
    expect(archived.notifications.map((n: any) => [n.id, n.read, n.archived])).toEqual([[first[0], true, true]]);
    expect((await call('MarkAllNotificationsRead', { caller: alice, up_to_id: first[2] })).unread.count).toBe(1);
    expect((await call('DeleteNotifications', { caller: alice, ids: [first[1]] })).unread.count).toBe(0);

    // Bob's items are untouched by all of it, and his ids are NOT_FOUND for Alice: nothing of hers changes either.
    const bobs = (await call('ListNotifications', { caller: bob })).notifications;
    expect(bobs.map((n: any) => n.read)).toEqual([false, false, false]);
    const foreign = await fails('MarkNotificationsRead', { caller: alice, ids: [bobs[0].id] });
    expect(foreign.code).toBe(grpc.status.NOT_FOUND);
    expect((await call('GetUnreadCount', { caller: bob })).unread.count).toBe(3);
    unread = (await call('GetUnreadCount', { caller: alice })).unread;
    expect(unread.count).toBe(0);
  });

  it('caps the unread count and says so', async () => {
    await add('10003', 120, 'vip_notice');
    expect((await call('GetUnreadCount', { caller: { app_code: 'lalu', user_id: '10003' } })).unread).toMatchObject({ count: 100, capped: true });
  });

  it('answers bad input with INVALID_ARGUMENT naming the problem', async () => {
    const token = (await call('ListNotifications', { caller: bob, page_size: 1 })).next_page_token;
    expect(token).not.toBe('');
    expect(await fails('ListNotifications', { caller: bob, page_size: -1 })).toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringMatching(/page_size/),
    });
    expect(await fails('ListNotifications', { caller: alice, page_token: token })).toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringMatching(/another caller/),
    });
    expect(await fails('ListNotifications', { caller: bob, page_token: 'forged' })).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    expect(await fails('ListNotifications', {})).toMatchObject({ code: grpc.status.INVALID_ARGUMENT, details: expect.stringMatching(/app_code/) });
    expect(await fails('MarkNotificationsRead', { caller: bob, ids: Array.from({ length: 101 }, (_, i) => String(i + 1)) })).toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: expect.stringMatching(/at most 100/),
    });
    expect(await fails('DeleteNotifications', { caller: bob, ids: ['999999999'] })).toMatchObject({ code: grpc.status.NOT_FOUND });
    expect(await fails('MarkAllNotificationsRead', { caller: bob, up_to_id: 'abc' })).toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'up_to_id must be a decimal item id from 1 to 2^64-1 (or empty for all), got "abc"',
    });
  });
});
