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

/** A user's channel on this process: its streams, and the SUBSCRIBE they all wait for. */
interface ChannelEntry {
  watchers: Set<Watcher>;
  subscribed: Promise<void>;
}

/** A stream's hold on its user's channel: taken at once, so the caller can release it before `ready` settles. */
export interface InboxWatch {
  /** Settles once the channel's subscription is in place (rejects when Redis refused it). */
  ready: Promise<void>;
  /** Releases the slot and, with the channel's last stream, the subscription; safe to call more than once. */
  stop(): Promise<void>;
}

/** One subscriber connection per process; a user's channel is subscribed while at least one of their streams is open. */
export class InboxLiveHub {
  private readonly channels = new Map<string, ChannelEntry>();
  private open = 0;

  constructor(
    private readonly subscriber: Redis,
    private readonly prefix: string,
    readonly maxStreams: number,
    /** Told the number of open streams whenever it changes (the open-stream gauge). */
    private readonly onStreams: (open: number) => void = () => undefined,
  ) {
    subscriber.on('message', (channel: string, message: string) => {
      const entry = this.channels.get(channel);
      if (!entry) return;
      let change: InboxChange;
      try {
        change = JSON.parse(message) as InboxChange;
      } catch {
        return;
      }
      for (const w of entry.watchers) w.onChange(change);
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
      for (const entry of this.channels.values()) for (const w of entry.watchers) w.onChange({ type: 'changed' });
    });
  }

  get streams(): number {
    return this.open;
  }

  /** Channels this process holds a subscription for (what it asked Redis for; a test compares it with PUBSUB). */
  get channelCount(): number {
    return this.channels.size;
  }

  /**
   * Starts delivering the owner's changes to `onChange`; null: the process is full. The slot is taken synchronously
   * and released by `stop()` whatever state the subscription is in, so a call cancelled mid-set-up cannot leak it.
   */
  watch(owner: InboxOwner, onChange: (change: InboxChange) => void): InboxWatch | null {
    if (this.open >= this.maxStreams) return null;
    const channel = liveChannel(this.prefix, owner);
    let entry = this.channels.get(channel);
    if (!entry) {
      // Commands on one connection run in order, so an UNSUBSCRIBE sent by a stop() after this is applied after it.
      const subscribed = this.subscriber.subscribe(channel).then(() => undefined);
      subscribed.catch(() => undefined);
      entry = { watchers: new Set(), subscribed };
      this.channels.set(channel, entry);
    }
    const watcher = { onChange };
    entry.watchers.add(watcher);
    this.open++;
    this.onStreams(this.open);
    const held = entry;
    let stopped = false;
    return {
      ready: held.subscribed,
      stop: async () => {
        if (stopped) return;
        stopped = true;
        this.open--;
        held.watchers.delete(watcher);
        const last = held.watchers.size === 0 && this.channels.get(channel) === held;
        if (last) this.channels.delete(channel);
        this.onStreams(this.open);
        if (last) await this.subscriber.unsubscribe(channel).catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    this.channels.clear();
    this.subscriber.disconnect();
  }
}
