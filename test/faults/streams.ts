import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { INBOX_PROTO } from '../../src/channels/inbox/api/inbox-service.ts';
import { unary } from '../helpers/grpc.ts';

export interface StreamCounts {
  users: number;
  /** Snapshots received (one per (re)connection). */
  snapshots: number;
  item_added: number;
  unread_changed: number;
  /** Streams that ended with an error and were opened again (an API process killed, a refusal). */
  reconnects: number;
  /** Reads made through the other device during the scenario. */
  reads: number;
  /** item_added events carrying someone else's item. */
  foreign: number;
  /** Users whose stream, once everything settled, still shows a count other than GetUnreadCount. */
  stale: number;
  stale_why: string[];
  /**
   * Of the stale ones, streams that announced an item whose fact the owner lost in a failover: the stream counted it
   * before the promoted database forgot it, and nothing has changed for that user since (reported, not a failure).
   */
  stale_owner_lost: number;
}

type Unread = { count: number; capped: boolean };

const STREAMS_PER_CONNECTION = 90;

/**
 * The gateway's view during a fault scenario: one WatchInbox stream per watched user, reopened after an error as a
 * gateway would, and a second device that marks a heavy user's inbox read now and then. What it checks at the end:
 * every stream shows what GetUnreadCount says, and no stream carried another user's item.
 */
export class StreamWatchers {
  /** Unary calls (the other device's reads, GetUnreadCount) on a connection of their own. */
  private readonly client: any;
  /** Streams spread over connections: each stream holds one of a connection's api_max_concurrent_streams (100). */
  private readonly streamClients: any[] = [];
  private readonly calls = new Map<string, grpc.ClientReadableStream<any>>();
  private readonly last = new Map<string, Unread>();
  /** Each user's stream story (the first few entries), printed for a stale stream. */
  private readonly story = new Map<string, string[]>();
  /** The event ids each user's stream announced (item_added). */
  private readonly announced = new Map<string, Set<string>>();
  private readonly openedAt = Date.now();
  private tell(user: string, what: string): void {
    const s = this.story.get(user) ?? this.story.set(user, []).get(user)!;
    if (s.length < 12) s.push(`${Date.now() - this.openedAt}ms ${what}`);
  }
  private stopped = false;
  private readonly counts: Omit<StreamCounts, 'stale' | 'stale_why' | 'stale_owner_lost'> = {
    users: 0,
    snapshots: 0,
    item_added: 0,
    unread_changed: 0,
    reconnects: 0,
    reads: 0,
    foreign: 0,
  };
  private reading: NodeJS.Timeout | null = null;

  private constructor(
    pkg: any,
    port: number,
    private readonly userOfEvent: (eventId: string) => string | undefined,
  ) {
    const connect = () => new pkg.InboxService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
    this.client = connect();
    this.connect = connect;
  }

  private readonly connect: () => any;

  private streamClientFor(user: string): any {
    const index = this.order.get(user) ?? this.order.set(user, this.order.size).get(user)!;
    const slot = Math.floor(index / STREAMS_PER_CONNECTION);
    while (this.streamClients.length <= slot) this.streamClients.push(this.connect());
    return this.streamClients[slot];
  }

  private readonly order = new Map<string, number>();

  static async open(port: number, users: readonly string[], reader: string, userOfEvent: (eventId: string) => string | undefined): Promise<StreamWatchers> {
    const pkg = (grpc.loadPackageDefinition(await protoLoader.load(INBOX_PROTO, { keepCase: true, longs: String, defaults: true, oneofs: true })) as any).notice
      .inbox.v1;
    const w = new StreamWatchers(pkg, port, userOfEvent);
    w.counts.users = users.length;
    for (const user of users) w.watch(user);
    w.reading = setInterval(() => {
      w.counts.reads++;
      unary(w.client, 'MarkAllNotificationsRead', { caller: { app_code: 'lalu', user_id: reader } }).catch(() => undefined);
    }, 1000);
    return w;
  }

  private watch(user: string): void {
    if (this.stopped) return;
    const call = this.streamClientFor(user).WatchInbox({ caller: { app_code: 'lalu', user_id: user } });
    this.calls.set(user, call);
    call.on('data', (e: any) => {
      if (e.snapshot) {
        this.counts.snapshots++;
        this.last.set(user, pick(e.snapshot.unread));
        this.tell(user, `snapshot ${pick(e.snapshot.unread).count}`);
      } else if (e.item_added) {
        this.counts.item_added++;
        this.last.set(user, pick(e.item_added.unread));
        this.tell(user, `item_added ${pick(e.item_added.unread).count}`);
        const eventId = String(JSON.parse(e.item_added.notification.data_json).event_id ?? '');
        if (this.userOfEvent(eventId) !== user) this.counts.foreign++;
        (this.announced.get(user) ?? this.announced.set(user, new Set()).get(user)!).add(eventId);
      } else if (e.unread_changed) {
        this.counts.unread_changed++;
        this.last.set(user, pick(e.unread_changed));
        this.tell(user, `unread_changed ${pick(e.unread_changed).count}`);
      }
    });
    call.on('error', (err: grpc.ServiceError) => {
      if (this.stopped) return;
      this.tell(user, `error ${err.code}`);
      this.counts.reconnects++;
      setTimeout(() => this.watch(user), 300);
    });
  }

  /** Waits (up to `timeoutMs`) for every stream to show GetUnreadCount's answer; the users that never do are stale. */
  async settle(timeoutMs: number, ownerLost: ReadonlySet<string> = new Set()): Promise<StreamCounts> {
    if (this.reading) clearInterval(this.reading);
    const deadline = Date.now() + timeoutMs;
    let why: string[] = [];
    let ownerLostStale = 0;
    for (;;) {
      why = [];
      ownerLostStale = 0;
      for (const user of this.calls.keys()) {
        const answer = await this.unreadCount(user).catch((err: Error) => err);
        if (answer instanceof Error) {
          why.push(`${user}: GetUnreadCount failed: ${answer.message.slice(0, 100)}`);
          continue;
        }
        const truth = pick(answer.unread);
        const seen = this.last.get(user);
        const stale = !seen || seen.count !== truth.count || seen.capped !== truth.capped;
        if (stale && [...(this.announced.get(user) ?? [])].some((id) => ownerLost.has(id))) ownerLostStale++;
        else if (stale)
          why.push(
            `${user}: stream ${seen ? `${seen.count}${seen.capped ? '+' : ''}` : 'nothing'}, GetUnreadCount ${truth.count}${truth.capped ? '+' : ''} (stream: ${(this.story.get(user) ?? []).join(', ')})`,
          );
      }
      if (why.length === 0 || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    return { ...this.counts, stale: why.length, stale_why: why.slice(0, 10), stale_owner_lost: ownerLostStale };
  }

  private unreadCount(user: string): Promise<any> {
    return new Promise((resolve, reject) =>
      this.client.GetUnreadCount({ caller: { app_code: 'lalu', user_id: user } }, { deadline: Date.now() + 5000 }, (err: Error | null, res: any) =>
        err ? reject(err) : resolve(res),
      ),
    );
  }

  close(): void {
    this.stopped = true;
    if (this.reading) clearInterval(this.reading);
    for (const call of this.calls.values()) call.cancel();
    for (const c of [this.client, ...this.streamClients]) c.close();
  }
}

const pick = (u: any): Unread => ({ count: Number(u?.count ?? 0), capped: Boolean(u?.capped) });
