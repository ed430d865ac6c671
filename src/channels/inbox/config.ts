import type { BlockOf } from '../../config/schema.ts';
import { z } from 'zod';
import { durationMs } from '../../config/duration.ts';
import { kindList, port } from '../../config/primitives.ts';

const DEFAULT_INBOX_KINDS = ['activity_notice', 'vip_notice', 'room_notice'] as const;

/** The site inbox channel: notice-service's own notice_inbox_items, read by the gateway over gRPC. */
export const inbox = z.strictObject({
  enabled: z.boolean().default(true),
  /** The notice kinds that land in the inbox (balance updates do not by default: they are state, not news). */
  kinds: kindList.default(() => [...DEFAULT_INBOX_KINDS]),
  /** How long an item is kept, per notice kind; `default` for kinds not listed. 0 keeps it until the cap pushes it out. */
  retention: z.record(z.string(), durationMs).default(() => ({ default: 90 * 24 * 3600 * 1000 })),
  /** Kinds whose notices past deliver.expire_after are not put in the inbox either (by default it keeps them: history). */
  drop_expired: kindList.default(() => []),
  /** The newest this many items of a user are kept; older ones are swept. */
  max_items_per_user: z.number().int().min(1).max(100_000).default(1000),
  /** How often the sweeper runs (retention, then the cap of users written since its last run). */
  sweep_interval: durationMs.default(10_000),
  /** Rows deleted per sweep statement, so a sweep never holds long locks. */
  sweep_batch_size: z.number().int().min(1).max(100_000).default(1000),
  /** Concurrent inbox deliveries per deliver process; they are batched into one INSERT. */
  concurrency: z.number().int().min(1).max(1000).default(16),
  /** Unread counts stop at this number and say `capped` (a badge shows "99+"). */
  unread_count_cap: z.number().int().min(1).max(10_000).default(100),
  /**
   * Signs page tokens so that a forged or altered one is refused. Required when the API listens beyond loopback;
   * an empty key (development only) still detects damaged tokens.
   */
  page_token_secret: z.string().default(''),
  /** Serve notice.inbox.v1.InboxService on its own listener (roles `inbox-api` and `all`). */
  api_enabled: z.boolean().default(true),
  /** The API's own address: loopback by default; anything else requires api_tls (mutual TLS with the gateway). */
  api_host: z.string().min(1).default('127.0.0.1'),
  api_port: port.default(13010),
  /** Mutual TLS: the server's certificate and key, and the CA that the gateway's client certificate must chain to. */
  api_tls: z.strictObject({ cert_file: z.string().min(1), key_file: z.string().min(1), client_ca_file: z.string().min(1) }).optional(),
  /** The API's own MySQL connections, so a flood of calls cannot take the deliver role's. */
  api_pool_size: z.number().int().min(1).max(100).default(4),
  /** Calls waiting for one of those connections; beyond it a call is answered RESOURCE_EXHAUSTED at once. */
  api_queue_limit: z.number().int().min(1).max(10_000).default(256),
  /** Deadline of each API query; a slower one fails the call UNAVAILABLE and frees its connection. */
  api_query_timeout: durationMs.default(2000),
  /**
   * A client certificate is checked at a full TLS handshake only, so the API bounds how long one lasts: a connection
   * is closed (GOAWAY) after `api_max_connection_age`, its calls and streams get `api_max_connection_age_grace` to
   * finish, and a TLS session may be resumed (no certificate shown) only within `api_tls_session_timeout` of the
   * handshake that checked one. A replaced or expired gateway certificate stops working within their sum (40 min).
   */
  api_max_connection_age: durationMs.default(30 * 60_000),
  api_max_connection_age_grace: durationMs.default(5 * 60_000),
  api_tls_session_timeout: durationMs.default(5 * 60_000),
  /** Concurrent calls per gateway connection (HTTP/2 streams). */
  api_max_concurrent_streams: z.number().int().min(1).max(10_000).default(100),
  /**
   * WatchInbox and the events behind it: the inbox channel and the API publish each user's changes on Redis pub/sub,
   * and every API process holding that user's stream hears them. Off: WatchInbox answers UNIMPLEMENTED.
   */
  live_events: z.boolean().default(true),
  /**
   * When a user reads inbox items, mark their C2C conversation with the notices' sender read in Tencent IM
   * (admin_set_msg_read), so the IM badge agrees: at most once per user per window, at its end, best effort.
   */
  im_read_sync: z
    .strictObject({
      enabled: z.boolean().default(true),
      window: durationMs.default(3000),
      /** admin_set_msg_read calls per second per app, shared by every API process (Tencent's quota is not documented here). */
      rate_limit_per_second: z.number().int().min(1).max(1000).default(50),
    })
    .default(() => ({ enabled: true, window: 3000, rate_limit_per_second: 50 })),
  /** Open WatchInbox streams per API process (each is a subscription and a little memory); beyond, RESOURCE_EXHAUSTED. */
  api_max_watch_streams: z.number().int().min(1).max(100_000).default(10_000),
  /**
   * How long one WatchInbox event may wait for the gateway to read it. A stream holds at most one unread event (later
   * changes only add to its count); one that reads nothing this long is ended RESOURCE_EXHAUSTED, so reconnect.
   */
  api_watch_stall_timeout: durationMs.default(30_000),
  /** gRPC server reflection, so grpcurl needs no proto; the schema is no secret, the listener's guard still applies. */
  api_reflection: z.boolean().default(true),
});
export type InboxConfig = z.infer<typeof inbox>;

export const inboxConfigShape = { inbox: inbox.default(() => inbox.parse({})) };

// The core's config type lists this block without importing this module (src/config/schema.ts ModuleBlocks).
declare module '../../config/schema.ts' {
  interface ModuleBlocks extends BlockOf<typeof inboxConfigShape> {}
}
