import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { describeError } from '../../../platform/errors.ts';
import type { InboxChange, InboxLiveHub } from '../live.ts';
import type { InboxItem, InboxOwner, InboxStore } from '../store.ts';
import { InvalidRequest, ownerOf } from './requests.ts';

/**
 * At most one event per stream this often: a burst of 200 items is a few events a second, not 200. The first change
 * after a quiet spell goes out at once (leading edge), so a single new item is not held back by the window.
 */
export const COALESCE_MS = 250;

/**
 * WatchInbox: subscribe first, then send the snapshot, so a change in between is not missed (it arrives as an event
 * after the snapshot). Changes are coalesced per stream; each event carries the fresh unread count.
 */
export function watchInboxHandler(deps: {
  store: InboxStore;
  hub: InboxLiveHub;
  unread(owner: InboxOwner): Promise<unknown>;
  toNotification(item: InboxItem): unknown;
  logger: Logger;
  grpc: typeof grpc;
}) {
  const { store, hub, logger } = deps;
  return async (call: grpc.ServerWritableStream<any, any>) => {
    let owner: InboxOwner;
    try {
      owner = ownerOf(call.request?.caller);
    } catch (err) {
      if (err instanceof InvalidRequest) return refuseStream(call, deps.grpc.status.INVALID_ARGUMENT, err.message);
      throw err;
    }
    let closed = false;
    let timer: NodeJS.Timeout | null = null;
    // What happened since the last event: how many items were added, and the newest of them (a count, not a list, so
    // a long outage of the API's MySQL cannot grow it).
    let addedCount = 0;
    let newestId: string | null = null;
    const newer = (a: string | null, b: string | null) => (a === null ? b : b === null ? a : BigInt(b) > BigInt(a) ? b : a);
    let flushing = Promise.resolve();
    let lastFlushAt = Number.NEGATIVE_INFINITY;
    let failures = 0;
    const flush = async () => {
      timer = null;
      lastFlushAt = Date.now();
      const [count, newest] = [addedCount, newestId];
      addedCount = 0;
      newestId = null;
      try {
        const [unread, item] = await Promise.all([deps.unread(owner), newest !== null ? store.item(owner, newest) : null]);
        if (closed) return;
        failures = 0;
        if (item) call.write({ item_added: { notification: deps.toNotification(item), added_count: count, unread } });
        else call.write({ unread_changed: unread });
      } catch (err) {
        // The change is not dropped (the user may change nothing more for hours): the stream tries again, backing off.
        addedCount += count;
        newestId = newer(newestId, newest);
        failures++;
        if (failures === 1 || failures % 10 === 0)
          logger.warn({ err: describeError(err), failures }, 'inbox watch: could not read the new state; trying again');
        schedule(Math.min(5000, COALESCE_MS * 2 ** failures));
      }
    };
    const schedule = (waitMs: number) => {
      if (timer || closed) return;
      timer = setTimeout(() => (flushing = flushing.then(flush)), waitMs);
    };
    const onChange = (change: InboxChange) => {
      if (change.type === 'added') {
        addedCount++;
        newestId = newer(newestId, change.id);
      }
      schedule(Math.max(0, lastFlushAt + COALESCE_MS - Date.now()));
    };
    const stop = await hub.watch(owner, onChange);
    if (!stop) {
      const details = `this inbox API process holds its limit of ${hub.maxStreams} watch streams (inbox.api_max_watch_streams); reconnect with backoff`;
      return refuseStream(call, deps.grpc.status.RESOURCE_EXHAUSTED, details);
    }
    const end = () => {
      if (closed) return;
      closed = true;
      if (timer) clearTimeout(timer);
      void stop();
    };
    call.on('cancelled', end);
    call.on('close', end);
    call.on('error', end);
    try {
      const [unread, newestId] = await Promise.all([deps.unread(owner), store.newestId(owner)]);
      if (!closed) call.write({ snapshot: { unread, newest_id: newestId ?? '' } });
    } catch (err) {
      end();
      logger.warn({ err: describeError(err) }, 'inbox watch: snapshot failed');
      const details = 'the inbox is unavailable; retry';
      refuseStream(call, deps.grpc.status.UNAVAILABLE, details);
    }
  };
}

/**
 * Ends a server stream with an error status. Emitting 'error' is how grpc-js sends the status; `destroy(err)` looks
 * the same but never sends it (the stream is gone before its final step), so the client waits forever.
 */
export function refuseStream(call: grpc.ServerWritableStream<any, any>, code: grpc.status, details: string): void {
  call.emit('error', Object.assign(new Error(details), { code, details }));
}
