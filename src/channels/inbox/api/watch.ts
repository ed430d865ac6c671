import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { describeError } from '../../../platform/errors.ts';
import type { InboxChange, InboxLiveHub } from '../live.ts';
import type { InboxItem, InboxOwner, InboxStore } from '../store.ts';
import { InvalidRequest, ownerOf } from './requests.ts';

/** Changes within this long become one event: a burst of 200 items is a few events a second, not 200. */
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
      if (err instanceof InvalidRequest)
        return call.destroy(Object.assign(new Error(err.message), { code: deps.grpc.status.INVALID_ARGUMENT, details: err.message }));
      throw err;
    }
    let closed = false;
    let timer: NodeJS.Timeout | null = null;
    let added: string[] = [];
    let flushing = Promise.resolve();
    const flush = async () => {
      timer = null;
      const ids = added;
      added = [];
      try {
        const unread = await deps.unread(owner);
        if (closed) return;
        const newest = ids.reduce((a, b) => (BigInt(b) > BigInt(a) ? b : a), ids[0] ?? '0');
        const item = ids.length > 0 ? await store.item(owner, newest) : null;
        if (closed) return;
        if (item) call.write({ item_added: { notification: deps.toNotification(item), added_count: ids.length, unread } });
        else call.write({ unread_changed: unread });
      } catch (err) {
        logger.warn({ err: describeError(err) }, 'inbox watch: could not read the new state; the next change or a reconnect brings it');
      }
    };
    const onChange = (change: InboxChange) => {
      if (change.type === 'added') added.push(change.id);
      if (!timer && !closed) timer = setTimeout(() => (flushing = flushing.then(flush)), COALESCE_MS);
    };
    const stop = await hub.watch(owner, onChange);
    if (!stop) {
      const details = `this inbox API process holds its limit of ${hub.maxStreams} watch streams (inbox.api_max_watch_streams); reconnect with backoff`;
      return call.destroy(Object.assign(new Error(details), { code: deps.grpc.status.RESOURCE_EXHAUSTED, details }));
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
      call.destroy(Object.assign(new Error(details), { code: deps.grpc.status.UNAVAILABLE, details }));
    }
  };
}
