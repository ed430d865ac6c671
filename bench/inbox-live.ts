import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createWorld } from './world.ts';
import { cpuSeconds, percentile, rssMb } from './proc-stats.ts';
import { freePort } from '../test/helpers/ports.ts';
import { insertActivityRows, type ActivityRow } from '../test/helpers/activity.ts';
import { INBOX_PROTO } from '../src/channels/inbox/api/inbox-service.ts';

export interface InboxLiveResult {
  streams: number;
  /** Stream openings answered with an error (a full MySQL queue) and opened again. */
  refused_while_opening: number;
  refused_by: Record<string, number>;
  /** How long opening every stream took (waves of 100). */
  open_seconds: number;
  rss_idle_mb: number;
  rss_with_streams_mb: number;
  kb_per_stream: number;
  /** CPU of the inbox-api process over 10 s with every stream open and nothing happening. */
  idle_cpu_ms_per_s: number;
  inserts_per_second: number;
  inserts: number;
  events_received: number;
  /** Owner's outbox commit → item_added on the stream of the item's user (ingest, deliver, pub/sub, API), ms. */
  event_p50_ms: number;
  event_p99_ms: number;
  /** Inbox item insert (its create_time, stamped as deliver inserts it) → item_added on the stream, ms. */
  insert_to_event_p50_ms: number;
  insert_to_event_p99_ms: number;
  /** Reads made through one connection (MarkAllNotificationsRead sent) → unread_changed on the user's other stream. */
  reads: number;
  read_to_event_p50_ms: number;
  read_to_event_p99_ms: number;
  /** CPU of the inbox-api process per event delivered to a stream, ms. */
  cpu_ms_per_event: number;
}

/**
 * Issue 36's stream measurement: `streams` WatchInbox streams open on one inbox-api process (one user each, over a
 * few client connections), then activity facts for those users at `ratePerSecond` for `seconds`: memory and CPU per
 * stream, and commit → item_added latency through deliver, Redis pub/sub and the API process.
 */
export async function runInboxLiveBench(streams: number, ratePerSecond: number, seconds: number): Promise<InboxLiveResult> {
  const port = await freePort();
  const world = await createWorld({
    wallet_notice_worker: { enabled: false },
    activity_notice_worker: { enabled: true, poll_interval: '50ms', batch_size: 500, lock_ttl: '30s', max_retry_count: 10, gap_grace: '60s' },
    tencent_im: { request_timeout: '3s', rate_limit_per_second: 0 },
    inbox: { enabled: true, api_port: port, api_max_concurrent_streams: 10_000, api_max_watch_streams: streams + 100 },
  });
  const clients: any[] = [];
  const calls: grpc.ClientReadableStream<any>[] = [];
  let closed = false;
  try {
    const api = await world.spawn('inbox-api');
    await world.spawn('ingest');
    await world.spawn('deliver');
    const pid = api.child.pid!;
    await new Promise((r) => setTimeout(r, 1000));
    const rssIdle = rssMb(pid);
    const pkg = (grpc.loadPackageDefinition(await protoLoader.load(INBOX_PROTO, { keepCase: true, longs: String, defaults: true, oneofs: true })) as any).notice
      .inbox.v1;
    // A few connections, as a gateway would hold (each carries up to api_max_concurrent_streams).
    const connections = Math.max(1, Math.ceil(streams / 5000));
    for (let i = 0; i < connections; i++)
      clients.push(new pkg.InboxService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }));
    const latencies: number[] = [];
    const insertLatencies: number[] = [];
    const readLatencies: number[] = [];
    const committedAt = new Map<number, number>();
    const readSentAt = new Map<number, number>();
    let snapshots = 0;
    let events = 0;
    let refused = 0;
    const refusedBy: Record<string, number> = {};
    const open = (u: number): Promise<void> =>
      new Promise((resolve) => {
        const call = clients[u % connections].WatchInbox({ caller: { app_code: 'lalu', user_id: String(500000 + u) } });
        call.on('data', (e: any) => {
          if (e.snapshot) {
            snapshots++;
            resolve();
          } else if (e.item_added) {
            events++;
            const n = Number(String(JSON.parse(e.item_added.notification.data_json).event_id).replace('live_', ''));
            const at = committedAt.get(n);
            if (at !== undefined) latencies.push(Date.now() - at);
            const created = e.item_added.notification.create_time;
            if (created) insertLatencies.push(Date.now() - (Number(created.seconds) * 1000 + Math.round(created.nanos / 1e6)));
          } else if (e.unread_changed) {
            const at = readSentAt.get(u);
            if (at !== undefined && e.unread_changed.count === 0) {
              readSentAt.delete(u);
              readLatencies.push(Date.now() - at);
            }
          }
        });
        // A burst of new streams can overflow the API's MySQL queue (UNAVAILABLE / RESOURCE_EXHAUSTED): as a gateway
        // would, open that one again after a pause.
        call.on('error', (err: grpc.ServiceError) => {
          if (closed) return;
          refused++;
          refusedBy[`${err.code} ${err.details}`.slice(0, 120)] = (refusedBy[`${err.code} ${err.details}`.slice(0, 120)] ?? 0) + 1;
          setTimeout(() => void (closed ? undefined : open(u).then(resolve)), 200);
        });
        calls.push(call);
      });
    // In waves, as a gateway's users connect: each wave's snapshots before the next.
    const openedAt = Date.now();
    for (let at = 0; at < streams; at += 100) {
      const wave = await Promise.race([
        Promise.all(Array.from({ length: Math.min(100, streams - at) }, (_, k) => open(at + k))).then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), 60_000)),
      ]);
      if (!wave)
        throw new Error(
          `inbox_live: ${snapshots}/${streams} snapshots after ${Math.round((Date.now() - openedAt) / 1000)} s; refused: ${JSON.stringify(refusedBy)}`,
        );
    }
    const openSeconds = (Date.now() - openedAt) / 1000;
    await new Promise((r) => setTimeout(r, 2000));
    const rssStreams = rssMb(pid);
    const idleCpu0 = cpuSeconds(pid);
    await new Promise((r) => setTimeout(r, 10_000));
    const idleCpu = (cpuSeconds(pid) - idleCpu0) / 10;

    const cpu0 = cpuSeconds(pid);
    const total = ratePerSecond * seconds;
    const started = Date.now();
    for (let n = 0; n < total; ) {
      const rows: ActivityRow[] = [];
      for (let k = 0; k < Math.max(1, ratePerSecond / 20) && n < total; k++, n++)
        rows.push({
          event_id: `live_${n}`,
          event_type: 'SystemNotice',
          // Spread over the users with streams, each user at most once per second (no coalescing in the measure).
          user_id: String(500000 + ((n * 7919) % streams)),
          payload: { title_key: 't', body_key: 'b', n },
          created_at_ms: Date.now(),
        });
      const at = Date.now();
      await insertActivityRows(world.env.owner, world.env.config.activity_database, rows);
      for (const r of rows) committedAt.set((r.payload as { n: number }).n, at);
      const due = started + (n / ratePerSecond) * 1000;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    }
    const until = Date.now() + 30_000;
    while (latencies.length < total && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 500));
    const cpu = cpuSeconds(pid) - cpu0;

    // A read on one device (a unary call through another connection) reaching the user's stream, with every stream
    // still open: one user in ten, 100 reads a second.
    const reader = new pkg.InboxService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    clients.push(reader);
    const readers = Math.max(1, Math.floor(streams / 10));
    const readStarted = Date.now();
    for (let k = 0; k < readers; k++) {
      const u = k * 10;
      const due = readStarted + (k / 100) * 1000;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      // Timed from the request: the event may arrive before the caller's own answer does.
      readSentAt.set(u, Date.now());
      reader.MarkAllNotificationsRead({ caller: { app_code: 'lalu', user_id: String(500000 + u) } }, () => undefined);
    }
    const readsUntil = Date.now() + 10_000;
    while (readLatencies.length < readers && Date.now() < readsUntil) await new Promise((r) => setTimeout(r, 100));
    latencies.sort((a, b) => a - b);
    insertLatencies.sort((a, b) => a - b);
    readLatencies.sort((a, b) => a - b);
    return {
      streams,
      refused_while_opening: refused,
      refused_by: refusedBy,
      open_seconds: Math.round(openSeconds * 10) / 10,
      rss_idle_mb: Math.round(rssIdle),
      rss_with_streams_mb: Math.round(rssStreams),
      kb_per_stream: Math.round((((rssStreams - rssIdle) * 1024) / streams) * 10) / 10,
      idle_cpu_ms_per_s: Math.round(idleCpu * 1000 * 10) / 10,
      inserts_per_second: ratePerSecond,
      inserts: total,
      events_received: events,
      event_p50_ms: percentile(latencies, 50),
      event_p99_ms: percentile(latencies, 99),
      insert_to_event_p50_ms: percentile(insertLatencies, 50),
      insert_to_event_p99_ms: percentile(insertLatencies, 99),
      reads: readLatencies.length,
      read_to_event_p50_ms: percentile(readLatencies, 50),
      read_to_event_p99_ms: percentile(readLatencies, 99),
      cpu_ms_per_event: Math.round((cpu / Math.max(1, events)) * 1000 * 100) / 100,
    };
  } finally {
    closed = true;
    for (const c of calls) c.cancel();
    for (const c of clients) c.close();
    await world.close();
  }
}
