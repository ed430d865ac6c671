import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { InboxOwner } from './store.ts';

/** What happened to a user's inbox: an item added (its id), or something read, archived or deleted. */
export type InboxChange = { type: 'added'; id: string } | { type: 'changed' };

/** A user's Redis pub/sub channel: every inbox API process with a stream open for them subscribes to it. */
export function liveChannel(prefix: string, owner: InboxOwner): string {
  return `${prefix}:inbox-live:${userTag(owner)}`;
}

/** A user's fixed-length tag for Redis key and channel names (ids are unbounded and may hold any character). */
export function userTag(owner: InboxOwner): string {
  return createHash('sha256').update(`${owner.appCode}\u0000${owner.userId}`).digest('base64url').slice(0, 22);
}

/**
 * Tells the processes holding these users' streams, best effort: pub/sub is fire and forget, so a message lost with
 * Redis is made good by the next change or by the snapshot a reconnecting client gets. One round trip for a batch.
 */
export async function publishInboxChanges(redis: Redis, prefix: string, changes: ReadonlyArray<{ owner: InboxOwner; change: InboxChange }>): Promise<void> {
  if (changes.length === 0) return;
  const pipeline = redis.pipeline();
  for (const { owner, change } of changes) pipeline.publish(liveChannel(prefix, owner), JSON.stringify(change));
  await pipeline.exec();
}

interface Watcher {
  onChange(change: InboxChange): void;
}

/** One subscriber connection per process; a user's channel is subscribed while at least one of their streams is open. */
export class InboxLiveHub {
  private readonly watchers = new Map<string, Set<Watcher>>();
  private open = 0;

  constructor(
    private readonly subscriber: Redis,
    private readonly prefix: string,
    readonly maxStreams: number,
  ) {
    subscriber.on('message', (channel: string, message: string) => {
      const set = this.watchers.get(channel);
      if (!set) return;
      let change: InboxChange;
      try {
        change = JSON.parse(message) as InboxChange;
      } catch {
        return;
      }
      for (const w of set) w.onChange(change);
    });
    // Messages published while the subscriber was away (Redis restarted, a failover) are gone: once it is back and
    // resubscribed, every open stream re-reads its counts instead of waiting for the user's next change.
    let dropped = false;
    subscriber.on('close', () => {
      dropped = true;
    });
    subscriber.on('ready', () => {
      if (!dropped) return;
      dropped = false;
      for (const set of this.watchers.values()) for (const w of set) w.onChange({ type: 'changed' });
    });
  }

  get streams(): number {
    return this.open;
  }

  /** Starts delivering the owner's changes to `onChange`; the returned function stops it. Null: the process is full. */
  async watch(owner: InboxOwner, onChange: (change: InboxChange) => void): Promise<(() => Promise<void>) | null> {
    if (this.open >= this.maxStreams) return null;
    const channel = liveChannel(this.prefix, owner);
    let set = this.watchers.get(channel);
    const first = !set;
    if (!set) this.watchers.set(channel, (set = new Set()));
    const watcher = { onChange };
    set.add(watcher);
    this.open++;
    if (first) await this.subscriber.subscribe(channel);
    let stopped = false;
    return async () => {
      if (stopped) return;
      stopped = true;
      this.open--;
      set.delete(watcher);
      if (set.size === 0 && this.watchers.get(channel) === set) {
        this.watchers.delete(channel);
        await this.subscriber.unsubscribe(channel).catch(() => undefined);
      }
    };
  }

  async close(): Promise<void> {
    this.watchers.clear();
    this.subscriber.disconnect();
  }
}
