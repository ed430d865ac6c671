import { describeError } from '../../../platform/errors.ts';
import { createRedis, type Redis } from '../../../platform/redis.ts';
import { InboxLiveHub, publishInboxChanges } from '../live.ts';
import { ReadSyncRequests } from '../read-sync.ts';
import type { InboxOwner } from '../store.ts';
import { readFileSync } from 'node:fs';
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { InboxConfig } from '../config.ts';
import { isLoopbackHost } from '../../../config/loopback.ts';
import { createMysqlPool, type Pool } from '../../../platform/mysql.ts';
import { InboxStore } from '../store.ts';
import { RoleConfigError, type Role } from '../../../app/role.ts';
import { addInboxService } from './inbox-service.ts';
import { QuietHoursStore } from '../../../quiet-hours/store.ts';
import { addPreferencesService, type PreferenceGrid } from '../../../preferences/api.ts';
import { PreferenceStore } from '../../../preferences/store.ts';
import type { NoticeMetrics } from '../../../observability/metrics.ts';

/** A legal request is a caller, filters and at most 100 ids: well under this. Bigger ones are refused unread. */
export const MAX_REQUEST_BYTES = 64 * 1024;

export interface InboxApiTlsFiles {
  cert: Buffer;
  key: Buffer;
  clientCa: Buffer;
}

/**
 * TLS sessions resumable only this long after their full handshake (Node's `sessionTimeout`, in seconds): a resumed
 * session shows no certificate, so an expired or replaced one would otherwise go on working. grpc-js's createSsl
 * takes no TLS server options; its credentials hand these constructor options to http2.createSecureServer as they are.
 */
function withSessionTimeout(credentials: grpc.ServerCredentials, timeoutMs: number): grpc.ServerCredentials {
  const options = (credentials as unknown as { _getConstructorOptions(): Record<string, unknown> | null })._getConstructorOptions();
  if (!options) throw new Error('grpc-js secure credentials without TLS server options: cannot bound session resumption');
  options.sessionTimeout = Math.max(1, Math.floor(timeoutMs / 1000));
  return credentials;
}

/** Thrown when the API cannot listen as configured; the message names the key. */
export class InboxApiConfigError extends RoleConfigError {}

/** Reads inbox.api_tls's files (at start-up and by `config check`), naming the key of one that cannot be used. */
export function readInboxApiTls(tls: NonNullable<InboxConfig['api_tls']>): InboxApiTlsFiles {
  const read = (key: keyof typeof tls, what: string, marker: RegExp) => {
    let text: Buffer;
    try {
      text = readFileSync(tls[key]);
    } catch (err) {
      throw new InboxApiConfigError(`inbox.api_tls.${key}: cannot read ${tls[key]} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (!marker.test(text.toString('latin1'))) throw new InboxApiConfigError(`inbox.api_tls.${key}: ${tls[key]} is not a PEM ${what}`);
    return text;
  };
  return {
    cert: read('cert_file', 'certificate', /-----BEGIN CERTIFICATE-----/),
    key: read('key_file', 'private key', /-----BEGIN [A-Z ]*PRIVATE KEY-----/),
    clientCa: read('client_ca_file', 'CA certificate', /-----BEGIN CERTIFICATE-----/),
  };
}

/**
 * notice.inbox.v1.InboxService on its own listener, apart from health: the gateway is its only client. Beyond
 * loopback it speaks mutual TLS only (a peer without a certificate from inbox.api_tls.client_ca_file is refused at
 * the handshake), so the request's `caller` is trusted because the gateway is. A bulkhead keeps a flood of calls
 * from slowing delivery: small messages, bounded streams, its own few MySQL connections, a deadline on each query.
 */
export class InboxApiServer implements Role {
  readonly name = 'inbox-api';
  private server: grpc.Server | null = null;
  private pool: Pool | null = null;
  port = 0;

  constructor(
    private readonly mysqlUrl: string,
    private readonly config: InboxConfig,
    private readonly logger: Logger,
    /** Which preferences exist (PreferencesService); none: the service is not served. */
    private readonly preferences?: PreferenceGrid,
    /** Where live events travel (WatchInbox) and reads are noted: the deployment's Redis, its prefix and each app's. */
    private readonly redis?: { url: string; prefix: string; prefixOf(appCode: string): string; cluster: boolean },
    /** Whether reads are noted for the IM read sync (deliver marks the users' IM conversations read). */
    private readonly readSyncOn = false,
    private readonly metrics?: NoticeMetrics,
  ) {}

  private readSync: ReadSyncRequests | null = null;

  /** Redis only carries live events and the read sync here: an outage is one warning, not an error per retry. */
  private quietRedis(redis: Redis): Redis {
    let warned = false;
    redis.on('error', (err: Error) => {
      if (!warned)
        this.logger.warn({ err: describeError(err) }, 'Redis unreachable: live inbox events and the IM read sync wait for it; the API still answers');
      warned = true;
    });
    redis.on('ready', () => (warned = false));
    return redis;
  }

  private hub: InboxLiveHub | null = null;
  private publisher: Redis | null = null;

  async start(): Promise<void> {
    const { config } = this;
    if (!config.api_tls && !isLoopbackHost(config.api_host)) {
      throw new InboxApiConfigError(`inbox.api_host ${config.api_host} is not loopback: set inbox.api_tls (cert_file, key_file, client_ca_file)`);
    }
    const tls = config.api_tls ? readInboxApiTls(config.api_tls) : null;
    const grpcJs = await import('@grpc/grpc-js');
    const credentials = tls
      ? withSessionTimeout(
          grpcJs.ServerCredentials.createSsl(tls.clientCa, [{ cert_chain: tls.cert, private_key: tls.key }], true),
          config.api_tls_session_timeout,
        )
      : grpcJs.ServerCredentials.createInsecure();
    const server = new grpcJs.Server({
      'grpc.max_receive_message_length': MAX_REQUEST_BYTES,
      'grpc.max_concurrent_streams': config.api_max_concurrent_streams,
      // A connection's client certificate was checked once, at its handshake: it lives this long, then reconnects.
      'grpc.max_connection_age_ms': config.api_max_connection_age,
      'grpc.max_connection_age_grace_ms': config.api_max_connection_age_grace,
    });
    this.pool = createMysqlPool(this.mysqlUrl, config.api_pool_size, { queueLimit: config.api_queue_limit });
    let live: { hub: InboxLiveHub; changed(owner: InboxOwner): void } | undefined;
    if (config.live_events && this.redis) {
      const { url, prefix, cluster } = this.redis;
      const publisher = (this.publisher ??= this.quietRedis(createRedis(url, 'producer', { cluster })));
      const metrics = this.metrics;
      const hub = new InboxLiveHub(this.quietRedis(createRedis(url, 'worker', { cluster })), prefix, config.api_max_watch_streams, (open) => {
        metrics?.inboxWatchStreams.set(open);
        metrics?.inboxWatchChannels.set(hub.channelCount);
      });
      this.hub = hub;
      live = {
        hub: this.hub,
        changed: (owner) =>
          void publishInboxChanges(publisher, prefix, [{ owner, change: { type: 'changed' } }]).catch((err) =>
            this.logger.warn({ err: describeError(err) }, 'inbox live event not published; open streams catch up on the next change'),
          ),
      };
    }
    if (this.redis && this.readSyncOn) {
      this.publisher ??= this.quietRedis(createRedis(this.redis.url, 'producer', { cluster: this.redis.cluster }));
      this.readSync = new ReadSyncRequests(this.publisher, this.redis.prefixOf, config.im_read_sync.window, this.logger);
    }
    const readSync = this.readSync;
    const definitions = [
      await addInboxService(
        server,
        new InboxStore(this.pool, config.api_query_timeout),
        config,
        this.logger,
        live,
        readSync ? (owner) => readSync.readBy(owner) : undefined,
      ),
    ];
    // The user's preferences live on the same listener, under the same guard: the gateway is the only caller.
    if (this.preferences)
      definitions.push(
        (await addPreferencesService(server, new PreferenceStore(this.pool), new QuietHoursStore(this.pool), this.preferences, this.logger)) as object,
      );
    if (config.api_reflection) {
      // Server reflection (grpc.reflection.v1 and v1alpha): grpcurl and other tools list and call the API without the
      // proto. It describes the schema only — no data — and sits behind the same listener and its mutual TLS.
      const { ReflectionService } = await import('@grpc/reflection');
      new ReflectionService(Object.assign({}, ...definitions)).addToServer(server);
    }
    try {
      this.port = await new Promise<number>((resolve, reject) =>
        server.bindAsync(`${config.api_host.includes(':') ? `[${config.api_host}]` : config.api_host}:${config.api_port}`, credentials, (err, port) =>
          err ? reject(err) : resolve(port),
        ),
      );
    } catch (err) {
      await this.pool.end();
      this.pool = null;
      throw new InboxApiConfigError(`inbox API cannot listen on ${config.api_host}:${config.api_port} (inbox.api_host/api_port): ${(err as Error).message}`);
    }
    this.server = server;
    this.logger.info({ host: config.api_host, port: this.port, tls: tls ? 'mutual' : 'none (loopback)' }, 'inbox API listening');
  }

  isRunning(): boolean {
    return this.server !== null;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server) {
      // Calls in flight get a moment to answer; then the rest are cut.
      await new Promise<void>((resolve) => {
        const cut = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 2000);
        server.tryShutdown(() => {
          clearTimeout(cut);
          resolve();
        });
      });
    }
    await this.pool?.end();
    this.pool = null;
    this.readSync = null;
    await this.hub?.close();
    this.hub = null;
    this.publisher?.disconnect();
    this.publisher = null;
  }
}
