import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { freePort } from './helpers/ports.ts';
import { unary } from './helpers/grpc.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { insertActivityRows, type ActivityRow } from './helpers/activity.ts';
import { PrivateRedis } from './helpers/redis-server.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { InboxStore } from '../src/channels/inbox/store.ts';
import { publishInboxChanges } from '../src/channels/inbox/live.ts';
import { INBOX_PROTO } from '../src/channels/inbox/api/inbox-service.ts';
import type { NoticeConfig } from '../src/config/schema.ts';

let env: TestEnv | undefined;
let procs: NoticeProcess[] = [];
let clients: any[] = [];
let redisServers: PrivateRedis[] = [];
afterEach(async () => {
  for (const c of clients) c.close();
  for (const p of procs) await p.stop();
  await env?.close();
  for (const r of redisServers) await r.destroy();
  redisServers = [];
  procs = [];
  clients = [];
  env = undefined;
});

const load = async (proto: string) =>
  (grpc.loadPackageDefinition(await protoLoader.load(proto, { keepCase: true, longs: String, defaults: true, oneofs: true })) as any).notice.inbox.v1;
const caller = (user: string) => ({ app_code: 'lalu', user_id: user });
const fact = (n: number, user: string): ActivityRow => ({
  event_id: `live_${user}_${n}`,
  event_type: 'SystemNotice',
  user_id: user,
  payload: { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body', n },
  created_at_ms: Date.now(),
});

/** A WatchInbox stream's events, with when each arrived. */
function watch(client: any, user: string) {
  const events: Array<{ at: number; event: any }> = [];
  const call = client.WatchInbox({ caller: caller(user) });
  call.on('data', (event: any) => events.push({ at: Date.now(), event }));
  call.on('error', () => undefined);
  return { events, cancel: () => call.cancel() };
}

/** Two notice-service processes: A ingests, delivers and serves the API on one port; B serves the API only, on another. */
async function twoProcesses(): Promise<{ a: any; b: any; portA: number }> {
  const [portA, portB] = [await freePort(), await freePort()];
  env = await createTestEnv({
    inbox: { enabled: true, api_port: portA, api_max_concurrent_streams: 200 },
    activity_notice_worker: { enabled: true, poll_interval: '50ms' },
  });
  procs.push(await startPipeline(env.config, ['ingest', 'deliver', 'inbox-api']));
  const configB = { ...env.config, inbox: { ...env.config.inbox, api_port: portB } } as NoticeConfig;
  procs.push(await startPipeline(configB, ['inbox-api']));
  const v1 = await load(INBOX_PROTO);
  const a = new v1.InboxService(`127.0.0.1:${portA}`, grpc.credentials.createInsecure());
  const b = new v1.InboxService(`127.0.0.1:${portB}`, grpc.credentials.createInsecure());
  clients.push(a, b);
  return { a, b, portA };
}

describe('WatchInbox: the gateway learns of changes as they happen, across processes', () => {
  it('snapshot, item_added within a second of the commit on another process, a read on one device reaches the other, bursts coalesced', async () => {
    const { a, b } = await twoProcesses();
    const phone = watch(b, '70001');
    const tablet = watch(a, '70001');
    await waitFor(
      async () => phone.events.length + tablet.events.length,
      (n) => n === 2,
      5_000,
      'two snapshots',
    );
    expect(phone.events[0]!.event).toMatchObject({ event: 'snapshot', snapshot: { unread: { count: 0, unseen: 0 }, newest_id: '' } });

    // A fact delivered by process A reaches the stream held by process B.
    const committed = Date.now();
    await insertActivityRows(env!.owner, env!.config.activity_database, [fact(1, '70001')]);
    await waitFor(
      async () => phone.events.length,
      (n) => n >= 2,
      5_000,
      'item_added on the phone',
    );
    const added = phone.events[1]!;
    expect(added.event).toMatchObject({ event: 'item_added', item_added: { added_count: 1, unread: { count: 1, unseen: 1 } } });
    expect(added.at - committed).toBeLessThan(1000);
    const id = added.event.item_added.notification.id;

    // Read on the tablet (process A's API): the phone's stream (process B) hears it within a second.
    const readAt = Date.now();
    await unary(a, 'MarkNotificationsRead', { caller: caller('70001'), ids: [id] });
    await waitFor(
      async () => phone.events.filter((e) => e.event.event === 'unread_changed').length,
      (n) => n >= 1,
      5_000,
      'unread_changed on the phone',
    );
    const changed = phone.events.find((e) => e.event.event === 'unread_changed')!;
    expect(changed.event.unread_changed).toMatchObject({ count: 0 });
    expect(changed.at - readAt).toBeLessThan(1000);

    // Seen is not read: the bell badge resets, the item stays unread.
    await insertActivityRows(env!.owner, env!.config.activity_database, [fact(2, '70001')]);
    await waitFor(
      () => unary(b, 'GetUnreadCount', { caller: caller('70001') }),
      (r) => r.unread.count === 1,
      5_000,
      'a second item',
    );
    const seen = await unary(b, 'MarkSeen', { caller: caller('70001') });
    expect(seen.unread).toMatchObject({ count: 1, unseen: 0 });

    // 200 items for one user within about a second: a few events a second on their stream, the final count exact.
    const burst = watch(b, '70002');
    await waitFor(
      async () => burst.events.length,
      (n) => n === 1,
      5_000,
      'snapshot',
    );
    const start = Date.now();
    for (let i = 0; i < 10; i++) {
      await insertActivityRows(
        env!.owner,
        env!.config.activity_database,
        Array.from({ length: 20 }, (_, k) => fact(i * 20 + k, '70002')),
      );
      await new Promise((r) => setTimeout(r, 80));
    }
    await waitFor(
      async () => burst.events.at(-1)!.event,
      (e) => e.event !== 'snapshot' && (e.item_added?.unread ?? e.unread_changed)?.capped === true,
      10_000,
      'the burst counted',
    );
    // Capped shows at the 100th item; the rest may still be in the pipeline on a loaded box, so wait for the sum, then
    // make sure nothing more arrives.
    const addedSum = () => burst.events.reduce((n, e) => n + (e.event.item_added?.added_count ?? 0), 0);
    await waitFor(
      async () => addedSum(),
      (n) => n >= 200,
      10_000,
      'all 200 items announced',
    );
    await new Promise((r) => setTimeout(r, 600));
    expect(addedSum()).toBe(200);
    const during = burst.events.slice(1);
    const seconds = Math.max(1, (during.at(-1)!.at - start) / 1000);
    expect(during.length / seconds).toBeLessThanOrEqual(6);
    const final = await unary(b, 'GetUnreadCount', { caller: caller('70002') });
    expect(final.unread).toMatchObject({ count: 100, capped: true });
    for (const s of [phone, tablet, burst]) s.cancel();
  });

  it('30 users on one process each hear only their own items; a reconnect ends with the same counts as GetUnreadCount', async () => {
    const { a, b } = await twoProcesses();
    const users = Array.from({ length: 30 }, (_, i) => String(71000 + i));
    const streams = new Map(users.map((u) => [u, watch(b, u)]));
    await waitFor(
      async () => [...streams.values()].every((s) => s.events.length === 1),
      (ok) => ok,
      5_000,
      '30 snapshots',
    );
    await insertActivityRows(
      env!.owner,
      env!.config.activity_database,
      users.flatMap((u, i) => Array.from({ length: 1 + (i % 3) }, (_, k) => fact(k, u))),
    );
    await waitFor(
      async () => users.every((u, i) => streams.get(u)!.events.reduce((n, e) => n + (e.event.item_added?.added_count ?? 0), 0) === 1 + (i % 3)),
      (ok) => ok,
      10_000,
      'every user their own items',
    );
    for (const u of users) {
      const mine = new Set((await unary(a, 'ListNotifications', { caller: caller(u) })).notifications.map((n: any) => n.id));
      for (const e of streams.get(u)!.events) if (e.event.item_added) expect(mine.has(e.event.item_added.notification.id)).toBe(true);
    }
    // Away for a while: more items and a read happen while no stream is open; the snapshot on return agrees.
    const u = users[0]!;
    streams.get(u)!.cancel();
    await insertActivityRows(env!.owner, env!.config.activity_database, [fact(9, u), fact(10, u)]);
    await waitFor(
      () => unary(a, 'GetUnreadCount', { caller: caller(u) }),
      (r) => r.unread.count === 3,
      5_000,
      'three unread',
    );
    const back = watch(b, u);
    await waitFor(
      async () => back.events.length,
      (n) => n === 1,
      5_000,
      'snapshot on return',
    );
    const truth = await unary(a, 'GetUnreadCount', { caller: caller(u) });
    expect(back.events[0]!.event.snapshot.unread).toEqual(truth.unread);
    back.cancel();
    for (const s of streams.values()) s.cancel();
  });

  it('a change made while Redis was away reaches open streams once it is back (the pub/sub message was lost)', async () => {
    const redis = new PrivateRedis();
    redisServers.push(redis);
    const port = await freePort();
    env = await createTestEnv({
      redis: { url: await redis.start() },
      inbox: { enabled: true, api_port: port },
      activity_notice_worker: { enabled: true, poll_interval: '50ms' },
    });
    procs.push(await startPipeline(env.config, ['ingest', 'deliver', 'inbox-api']));
    const client = new (await load(INBOX_PROTO)).InboxService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    clients.push(client);
    await insertActivityRows(env.owner, env.config.activity_database, [fact(1, '73001'), fact(2, '73001')]);
    await waitFor(
      () => unary(client, 'GetUnreadCount', { caller: caller('73001') }),
      (r) => r.unread.count === 2,
      5_000,
      'two unread',
    );
    const stream = watch(client, '73001');
    await waitFor(
      async () => stream.events.length,
      (n) => n === 1,
      5_000,
      'snapshot',
    );
    // Redis goes away; the user reads on another device meanwhile (written straight to MySQL: no message at all).
    await redis.stop();
    expect(await new InboxStore(env.notice).markAllRead({ appCode: 'lalu', userId: '73001' }, null, [], Date.now())).toBe(2);
    await redis.start(redis.port);
    await waitFor(
      async () => stream.events.at(-1)!.event,
      (e) => e.event === 'unread_changed' && e.unread_changed.count === 0,
      10_000,
      'the stream re-read its counts after the subscriber came back',
    );
    stream.cancel();
  });

  it('a change whose state cannot be read at once (MySQL busy) still reaches the stream, later', async () => {
    const port = await freePort();
    env = await createTestEnv({ inbox: { enabled: true, api_port: port, api_query_timeout: '300ms' } });
    procs.push(await startPipeline(env.config, ['inbox-api']));
    const client = new (await load(INBOX_PROTO)).InboxService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    clients.push(client);
    const stream = watch(client, '75001');
    await waitFor(
      async () => stream.events.length,
      (n) => n === 1,
      5_000,
      'snapshot',
    );
    // The table is locked (as a long migration or a backup might): the stream's reads time out until it is released.
    const conn = await env.notice.getConnection();
    try {
      await conn.query('LOCK TABLES notice_inbox_items WRITE');
      const owner = { appCode: 'lalu', userId: '75001' };
      const fact = { sourceName: 'activity', appCode: 'lalu', sourceEventId: 'busy_1' };
      const ids = await new InboxStore(conn as never).insert([
        {
          ...owner,
          fact,
          noticeKind: 'activity_notice',
          eventType: 'SystemNotice',
          payload: '{"event_id":"busy_1"}',
          createdAtMs: Date.now(),
          expireAtMs: null,
        },
      ]);
      await publishInboxChanges(env.redis, env.config.redis.prefix, [{ owner, change: { type: 'added', id: [...ids.values()][0]! } }]);
      await new Promise((r) => setTimeout(r, 1500));
    } finally {
      await conn.query('UNLOCK TABLES');
      conn.release();
    }
    await waitFor(
      async () => stream.events.at(-1)!.event,
      (e) => e.event === 'item_added' && e.item_added.unread.count === 1,
      10_000,
      'item_added once MySQL answers again',
    );
    stream.cancel();
  });

  it('a refused stream (bad caller, the process full, live events off) ends with its status, not silence', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    env = await createTestEnv({ inbox: { enabled: true, api_port: portA, api_max_watch_streams: 1 } });
    procs.push(await startPipeline(env.config, ['inbox-api']));
    const configB = { ...env.config, inbox: { ...env.config.inbox, api_port: portB, live_events: false } } as NoticeConfig;
    procs.push(await startPipeline(configB, ['inbox-api']));
    const v1 = await load(INBOX_PROTO);
    const a = new v1.InboxService(`127.0.0.1:${portA}`, grpc.credentials.createInsecure());
    const b = new v1.InboxService(`127.0.0.1:${portB}`, grpc.credentials.createInsecure());
    clients.push(a, b);
    const ending = (client: any, request: unknown) =>
      new Promise<grpc.ServiceError | 'timeout'>((resolve) => {
        const call = client.WatchInbox(request);
        call.on('data', () => undefined);
        call.on('error', resolve);
        setTimeout(() => {
          call.cancel();
          resolve('timeout');
        }, 5_000);
      });
    expect(await ending(a, { caller: { app_code: 'lalu', user_id: '' } })).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    const first = watch(a, '74001');
    await waitFor(
      async () => first.events.length,
      (n) => n === 1,
      5_000,
      'the first stream',
    );
    expect(await ending(a, { caller: caller('74002') })).toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
    expect(await ending(b, { caller: caller('74001') })).toMatchObject({ code: grpc.status.UNIMPLEMENTED });
    first.cancel();
  });

  it('a v1 client generated before WatchInbox and unseen still works against the new server', async () => {
    const { portA } = await twoProcesses();
    const before = await load(fileURLToPath(new URL('./fixtures/inbox-v1-before-watch.proto', import.meta.url)));
    const oldClient = new before.InboxService(`127.0.0.1:${portA}`, grpc.credentials.createInsecure());
    clients.push(oldClient);
    await insertActivityRows(env!.owner, env!.config.activity_database, [fact(1, '72001')]);
    const listed = await waitFor(
      () => unary(oldClient, 'ListNotifications', { caller: caller('72001') }),
      (r) => r.notifications.length === 1,
      5_000,
      'the item',
    );
    expect(listed.unread).toEqual({ count: 1, capped: false, by_kind: { activity_notice: 1 } });
    const marked = await unary(oldClient, 'MarkNotificationsRead', { caller: caller('72001'), ids: [listed.notifications[0].id] });
    expect(marked).toMatchObject({ updated_count: 1, unread: { count: 0 } });
  });
});
