import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { describeError } from '../../../platform/errors.ts';
import type { InboxChange, InboxLiveHub, InboxWatch } from '../live.ts';
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
 *
 * The stream's cleanup is attached before its first `await`, so a call cancelled at any point of its set-up gives
 * its slot and subscription back. At most one event is in flight per stream: while the gateway has not taken the
 * last one, changes only add to the pending count, so a stream that never reads holds one event, not a growing
 * backlog; one that reads nothing for `stallMs` is ended RESOURCE_EXHAUSTED.
 */
export function watchInboxHandler(deps: {
  store: InboxStore;
  hub: InboxLiveHub;
  unread(owner: InboxOwner): Promise<unknown>;
  toNotification(item: InboxItem): unknown;
  logger: Logger;
  grpc: typeof grpc;
  /** How long one event may wait for the gateway to read it before the stream is ended. */
  stallMs: number;
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
    let stallTimer: NodeJS.Timeout | null = null;
    let held: InboxWatch | null = null;
    // What happened since the last event: how many items were added, and the newest of them (a count, not a list, so
    // a long outage of the API's MySQL cannot grow it).
    let addedCount = 0;
    let newestId: string | null = null;
    let changedSince = false;
    let inFlight = false;
    const newer = (a: string | null, b: string | null) => (a === null ? b : b === null ? a : BigInt(b) > BigInt(a) ? b : a);
    const end = () => {
      if (closed) return;
      closed = true;
      if (timer) clearTimeout(timer);
      if (stallTimer) clearTimeout(stallTimer);
      if (held) void held.stop();
    };
    call.on('cancelled', end);
    call.on('close', end);
    call.on('error', end);
    if (call.cancelled) return end();

    /** Writes one event; the next waits until the gateway has taken this one (or the stream is ended as stalled). */
    const send = (message: unknown) => {
      inFlight = true;
      stallTimer = setTimeout(() => {
        if (closed) return;
        end();
        const details = `the stream did not read its events for ${deps.stallMs} ms (inbox.api_watch_stall_timeout); reconnect and read`;
        refuseStream(call, deps.grpc.status.RESOURCE_EXHAUSTED, details);
      }, deps.stallMs);
      call.write(message, () => {
        inFlight = false;
        if (stallTimer) clearTimeout(stallTimer);
        stallTimer = null;
        if (changedSince) schedule(Math.max(0, lastFlushAt + COALESCE_MS - Date.now()));
      });
    };
    let flushing = Promise.resolve();
    let lastFlushAt = Number.NEGATIVE_INFINITY;
    let failures = 0;
    const flush = async () => {
      timer = null;
      if (closed || inFlight) return; // the write's callback schedules the next flush
      lastFlushAt = Date.now();
      const [count, newest] = [addedCount, newestId];
      addedCount = 0;
      newestId = null;
      changedSince = false;
      try {
        const [unread, item] = await Promise.all([deps.unread(owner), newest !== null ? store.item(owner, newest) : null]);
        if (closed) return;
        failures = 0;
        if (item) send({ item_added: { notification: deps.toNotification(item), added_count: count, unread } });
        else send({ unread_changed: unread });
      } catch (err) {
        // The change is not dropped (the user may change nothing more for hours): the stream tries again, backing off.
        addedCount += count;
        newestId = newer(newestId, newest);
        changedSince = true;
        failures++;
        if (failures === 1 || failures % 10 === 0)
          logger.warn({ err: describeError(err), failures }, 'inbox watch: could not read the new state; trying again');
        schedule(Math.min(5000, COALESCE_MS * 2 ** failures));
      }
    };
    const schedule = (waitMs: number) => {
      if (timer || closed || inFlight) return;
      timer = setTimeout(() => (flushing = flushing.then(flush)), waitMs);
    };
    const onChange = (change: InboxChange) => {
      if (change.type === 'added') {
        addedCount++;
        newestId = newer(newestId, change.id);
      }
      changedSince = true;
      schedule(Math.max(0, lastFlushAt + COALESCE_MS - Date.now()));
    };
    held = hub.watch(owner, onChange);
    if (!held) {
      closed = true;
      const details = `this inbox API process holds its limit of ${hub.maxStreams} watch streams (inbox.api_max_watch_streams); reconnect with backoff`;
      return refuseStream(call, deps.grpc.status.RESOURCE_EXHAUSTED, details);
    }
    try {
      await held.ready;
      if (closed) return;
      const [unread, newestId] = await Promise.all([deps.unread(owner), store.newestId(owner)]);
      if (!closed) send({ snapshot: { unread, newest_id: newestId ?? '' } });
    } catch (err) {
      if (closed) return;
      end();
      logger.warn({ err: describeError(err) }, 'inbox watch: set-up failed');
      refuseStream(call, deps.grpc.status.UNAVAILABLE, 'the inbox is unavailable; retry');
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
