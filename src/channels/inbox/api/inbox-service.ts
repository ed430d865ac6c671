import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { InboxConfig } from '../config.ts';
import { describeError } from '../../../platform/errors.ts';
import type { InboxItem, InboxOwner, InboxStore, UnreadCount } from '../store.ts';
import { decodePageToken, encodePageToken } from './page-token.ts';
import type { InboxLiveHub } from '../live.ts';
import { refuseStream, watchInboxHandler } from './watch.ts';
import { filterOf, idsOf, InvalidRequest, kindsOf, ownerOf, pageSizeOf, upToIdOf } from './requests.ts';

export const INBOX_PROTO = fileURLToPath(new URL('../../../../proto/notice/inbox/v1/inbox.proto', import.meta.url));

class NotFound extends Error {}

const timestamp = (ms: number | null) => (ms === null ? null : { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1_000_000 });

function toNotification(item: InboxItem) {
  return {
    id: item.id,
    kind: item.noticeKind,
    event_type: item.eventType,
    data_json: item.payload,
    read: item.read,
    archived: item.archived,
    create_time: timestamp(item.createdAtMs),
    read_time: timestamp(item.readAtMs),
    archive_time: timestamp(item.archivedAtMs),
  };
}

const toUnread = (u: UnreadCount) => ({ count: u.count, capped: u.capped, by_kind: u.byKind, unseen: u.unseen });

/** notice.inbox.v1.InboxService over the store: validation, ownership, paging; the SQL is InboxStore's. */
export function inboxHandlers(
  store: InboxStore,
  config: InboxConfig,
  logger: Logger,
  now: () => number = Date.now,
  /** Tells the owner's open streams (any process) that something changed; best effort, never fails the call. */
  changed: (owner: InboxOwner) => void = () => undefined,
  /** The owner read items (read, mark-all, archive): their IM conversation is marked read too, later, best effort. */
  read: (owner: InboxOwner) => void = () => undefined,
) {
  const unread = (owner: InboxOwner, kinds: readonly string[] = []) => store.unreadCount(owner, kinds, config.unread_count_cap).then(toUnread);

  /** Every id must be the caller's: someone else's looks exactly like a missing one (NOT_FOUND), and nothing changes. */
  async function ownIds(owner: InboxOwner, raw: unknown): Promise<string[]> {
    const ids = idsOf(raw);
    const owned = await store.ownedIds(owner, ids);
    const missing = ids.filter((id) => !owned.has(id));
    if (missing.length > 0) throw new NotFound(`no such notification for this caller: ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ', …' : ''}`);
    return ids;
  }

  /** A change by ids: the caller's own ids only, then the change, answered with the new unread count. */
  const byIds =
    (change: (owner: InboxOwner, ids: string[]) => Promise<number>, reads = false) =>
    async (req: any) => {
      const owner = ownerOf(req.caller);
      const n = await change(owner, await ownIds(owner, req.ids));
      if (n > 0) changed(owner);
      if (n > 0 && reads) read(owner);
      return { updated_count: n, unread: await unread(owner) };
    };

  const handlers = {
    async ListNotifications(req: any) {
      const owner = ownerOf(req.caller);
      const filter = filterOf(req);
      const pageSize = pageSizeOf(req.page_size);
      let beforeId: string | null = null;
      if (req.page_token) {
        const decoded = decodePageToken(config.page_token_secret, owner, filter, req.page_token);
        if (!decoded.ok) throw new InvalidRequest(decoded.reason);
        beforeId = decoded.lastId;
      }
      const items = await store.list(owner, filter, beforeId, pageSize + 1);
      const page = items.slice(0, pageSize);
      const next = items.length > pageSize ? encodePageToken(config.page_token_secret, owner, filter, page[page.length - 1]!.id) : '';
      return { notifications: page.map(toNotification), next_page_token: next, unread: await unread(owner) };
    },
    async GetUnreadCount(req: any) {
      const owner = ownerOf(req.caller);
      return { unread: await unread(owner, kindsOf(req.kinds)) };
    },
    MarkNotificationsRead: byIds((owner, ids) => store.markRead(owner, ids, now()), true),
    MarkNotificationsUnread: byIds((owner, ids) => store.markUnread(owner, ids)),
    async MarkAllNotificationsRead(req: any) {
      const owner = ownerOf(req.caller);
      const upTo = upToIdOf(req.up_to_id);
      const n = await store.markAllRead(owner, upTo, kindsOf(req.kinds), now());
      if (n > 0) changed(owner);
      if (n > 0) read(owner);
      return { updated_count: n, unread: await unread(owner) };
    },
    async MarkSeen(req: any) {
      const owner = ownerOf(req.caller);
      await store.markSeen(owner, upToIdOf(req.up_to_id), now());
      changed(owner);
      return { updated_count: 0, unread: await unread(owner) };
    },
    ArchiveNotifications: byIds((owner, ids) => store.archive(owner, ids, now()), true),
    UnarchiveNotifications: byIds((owner, ids) => store.unarchive(owner, ids)),
    DeleteNotifications: byIds((owner, ids) => store.delete(owner, ids)),
  };
  return handlers;
}

/** Refused before any query: the API's connection queue is full (a flood); the gateway should back off. */
const isOverloaded = (err: unknown) => err instanceof Error && err.message === 'Queue limit reached.';

/** Adds InboxService to a gRPC server (the inbox API's own listener, see ./server.ts). */
export async function addInboxService(
  server: grpc.Server,
  store: InboxStore,
  config: InboxConfig,
  logger: Logger,
  live?: { hub: InboxLiveHub; changed(owner: InboxOwner): void },
  read?: (owner: InboxOwner) => void,
): Promise<object> {
  const grpcJs = await import('@grpc/grpc-js');
  const protoLoader = await import('@grpc/proto-loader');
  const definition = await protoLoader.load(INBOX_PROTO, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  const pkg = grpcJs.loadPackageDefinition(definition) as any;
  const handlers = inboxHandlers(store, config, logger, Date.now, live?.changed, read);
  const unary = Object.fromEntries(
    Object.entries(handlers).map(([name, handler]) => [
      name,
      (call: grpc.ServerUnaryCall<any, any>, callback: grpc.sendUnaryData<any>) => {
        handler(call.request).then(
          (res) => callback(null, res),
          (err) => {
            if (err instanceof InvalidRequest) return callback({ code: grpcJs.status.INVALID_ARGUMENT, details: err.message });
            if (err instanceof NotFound) return callback({ code: grpcJs.status.NOT_FOUND, details: err.message });
            if (isOverloaded(err))
              return callback({ code: grpcJs.status.RESOURCE_EXHAUSTED, details: 'the inbox API is at its limit of concurrent calls; retry with backoff' });
            logger.warn({ method: name, err: describeError(err) }, 'inbox API call failed');
            callback({ code: grpcJs.status.UNAVAILABLE, details: 'the inbox is unavailable; retry' });
          },
        );
      },
    ]),
  );
  const unread = (owner: InboxOwner) => store.unreadCount(owner, [], config.unread_count_cap).then(toUnread);
  const streaming = live
    ? { WatchInbox: watchInboxHandler({ store, hub: live.hub, unread, toNotification, logger, grpc: grpcJs, stallMs: config.api_watch_stall_timeout }) }
    : {
        WatchInbox: (call: grpc.ServerWritableStream<any, any>) =>
          refuseStream(call, grpcJs.status.UNIMPLEMENTED, 'live inbox events are off (inbox.live_events)'),
      };
  server.addService(pkg.notice.inbox.v1.InboxService.service, { ...unary, ...streaming });
  return definition;
}
