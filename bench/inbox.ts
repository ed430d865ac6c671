import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createWorld } from './world.ts';
import { percentile } from './proc-stats.ts';
import { createLogger } from '../src/platform/logger.ts';
import { InboxStore } from '../src/channels/inbox/store.ts';
import { addInboxService, INBOX_PROTO } from '../src/channels/inbox/api/inbox-service.ts';
import { factHash } from '../src/channels/inbox/store.ts';

export interface InboxSizes {
  items: number;
  users: number;
  heavyUsers: number;
  heavyItems: number;
  cappedUsers: number;
  cappedItems: number;
}

/**
 * The inbox read side at scale: `items` over `users` (a few heavy users with 10k+ items, some at the 1,000-item cap,
 * the rest spread evenly), then p50/p99 of ListNotifications (first page and a page deep down), GetUnreadCount and
 * MarkAllNotificationsRead, each timed from a real gRPC client over TCP.
 */
export async function runInboxBench(size: InboxSizes, log: (line: string) => void) {
  const world = await createWorld({ inbox: { enabled: true, page_token_secret: 'bench' } });
  const server = new grpc.Server();
  try {
    const { env } = world;
    const store = new InboxStore(env.notice);
    const owners: number[] = [];
    for (let u = 0; u < size.heavyUsers; u++) for (let i = 0; i < size.heavyItems; i++) owners.push(u);
    for (let u = 0; u < size.cappedUsers; u++) for (let i = 0; i < size.cappedItems; i++) owners.push(size.heavyUsers + u);
    const spreadFrom = size.heavyUsers + size.cappedUsers;
    const spread = size.users - spreadFrom;
    for (let i = owners.length; i < size.items; i++) owners.push(spreadFrom + (i % spread));
    // Shuffled, so one user's items interleave with everyone's, as they arrive in production.
    for (let i = owners.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [owners[i], owners[j]] = [owners[j]!, owners[i]!];
    }
    const started = performance.now();
    const CHUNK = 2000;
    const kinds = ['activity_notice', 'vip_notice', 'room_notice'];
    for (let at = 0; at < owners.length; at += CHUNK) {
      const rows = owners.slice(at, at + CHUNK).map((u, k) => {
        const n = at + k;
        const fact = { sourceName: 'bench', appCode: 'lalu', sourceEventId: `b${n}` };
        return [
          factHash(fact),
          'lalu',
          String(100000 + u),
          'bench',
          fact.sourceEventId,
          kinds[n % 3],
          'SystemNotice',
          `{"title_key":"t","n":${n}}`,
          1800000000000 + n,
          null,
        ];
      });
      await env.notice.query(
        `INSERT INTO notice_inbox_items (fact_hash, app_code, user_id, source_name, source_event_id, notice_kind, event_type, payload, created_at_ms, expire_at_ms) VALUES ?`,
        [rows],
      );
      if ((at / CHUNK) % 50 === 0) log(`inbox: ${at + rows.length} of ${owners.length} items`);
    }
    const fillSeconds = (performance.now() - started) / 1000;
    await env.notice.query('ANALYZE TABLE notice_inbox_items');

    await addInboxService(server, store, env.config.inbox, createLogger('silent'));
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    const pkg = grpc.loadPackageDefinition(await protoLoader.load(INBOX_PROTO, { keepCase: true, longs: String, enums: String, defaults: true })) as any;
    const client = new pkg.notice.inbox.v1.InboxService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const call = (method: string, req: object): Promise<any> =>
      new Promise((resolve, reject) => client[method](req, (err: Error | null, res: any) => (err ? reject(err) : resolve(res))));
    const caller = (u: number) => ({ app_code: 'lalu', user_id: String(100000 + u) });
    const timed = async (samples: number, pick: (i: number) => Promise<unknown>) => {
      const ms: number[] = [];
      for (let i = 0; i < samples; i++) {
        const t = performance.now();
        await pick(i);
        ms.push(performance.now() - t);
      }
      ms.sort((a, b) => a - b);
      return { samples, p50_ms: +percentile(ms, 50).toFixed(2), p99_ms: +percentile(ms, 99).toFixed(2) };
    };
    const anyUser = () => Math.floor(Math.random() * size.users);
    const heavy = (i: number) => i % Math.max(1, size.heavyUsers);
    await timed(50, () => call('ListNotifications', { caller: caller(anyUser()), page_size: 20 })); // warm-up
    const result = {
      ...size,
      fill_seconds: +fillSeconds.toFixed(1),
      list_first_page: await timed(500, () => call('ListNotifications', { caller: caller(anyUser()), page_size: 20 })),
      list_first_page_heavy_user: await timed(200, (i) => call('ListNotifications', { caller: caller(heavy(i)), page_size: 20 })),
      list_unread_heavy_user: await timed(200, (i) => call('ListNotifications', { caller: caller(heavy(i)), page_size: 20, read: 'READ_FILTER_UNREAD' })),
      list_page_50_heavy_user: await (async () => {
        // A token 50 pages down a heavy user's inbox, then that page timed.
        let token = '';
        for (let p = 0; p < 50; p++) token = (await call('ListNotifications', { caller: caller(0), page_size: 20, page_token: token })).next_page_token;
        return timed(200, () => call('ListNotifications', { caller: caller(0), page_size: 20, page_token: token }));
      })(),
      unread_count: await timed(500, () => call('GetUnreadCount', { caller: caller(anyUser()) })),
      unread_count_heavy_user: await timed(200, (i) => call('GetUnreadCount', { caller: caller(heavy(i)) })),
      mark_all_read_capped_user: await timed(size.cappedUsers, (i) => call('MarkAllNotificationsRead', { caller: caller(size.heavyUsers + i) })),
      mark_all_read_heavy_user: await timed(size.heavyUsers, (i) => call('MarkAllNotificationsRead', { caller: caller(i) })),
    };
    client.close();
    return result;
  } finally {
    server.forceShutdown();
    await world.close();
  }
}
