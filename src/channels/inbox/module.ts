import { CHANNEL_INBOX } from '../../ledger/types.ts';
import { isLoopbackHost } from '../../config/loopback.ts';
import type { ChannelModule } from '../types.ts';
import { inboxConfigShape } from './config.ts';
import { redisPrefixOf } from '../../config/redis-keyspace.ts';

/** The site inbox: notice-service's own notice_inbox_items, served to the gateway by its gRPC API (role inbox-api). */
export const inboxModule: ChannelModule<typeof inboxConfigShape> = {
  name: CHANNEL_INBOX,
  configKey: 'inbox',
  configShape: inboxConfigShape,
  description: 'Site inbox entries (MySQL)',
  kinds: (config) => (config.inbox.enabled ? config.inbox.kinds : []),
  ownQueueKinds: () => [],
  concurrency: (config) => config.inbox.concurrency,
  // One batched INSERT; MySQL's own timeouts bound it well under the default job lock.
  longestSendMs: () => 10_000,
  rateLimitPerSecond: () => null,
  keepsExpired: (config, kind) => !config.inbox.drop_expired.includes(kind) && !config.inbox.drop_expired.includes('*'),
  senderProblem: () => null,
  configProblems: (config) => {
    // The inbox API answers with people's notices: beyond loopback only to an authenticated gateway, with real page tokens.
    const { inbox } = config;
    if (!inbox.api_enabled || isLoopbackHost(inbox.api_host)) return [];
    const problems: string[] = [];
    if (!inbox.api_tls) {
      problems.push(
        `inbox.api_tls: required when inbox.api_host (${inbox.api_host}) is not loopback; set inbox.api_tls.cert_file, inbox.api_tls.key_file and ` +
          `inbox.api_tls.client_ca_file (mutual TLS with the gateway)`,
      );
    }
    if (inbox.page_token_secret === '') {
      problems.push(
        `inbox.page_token_secret: required when inbox.api_host (${inbox.api_host}) is not loopback (an empty secret lets anyone forge page tokens)`,
      );
    }
    return problems;
  },
  create: async (ctx) => (await import('./channel.ts')).inboxChannel(ctx),
  readStates: async (pool) => new (await import('./read-state.ts')).InboxReadState(pool),
  roles: [
    {
      name: 'inbox-api',
      description: 'the inbox gRPC API for the gateway (inbox.api_host:api_port, mutual TLS beyond loopback)',
      enabled: (config) => config.inbox.api_enabled,
      create: async (config, logger, metrics) =>
        new (await import('./api/server.ts')).InboxApiServer(
          config.mysql.url,
          config.inbox,
          logger,
          config.preferences.enabled ? (await import('../../preferences/api.ts')).preferenceGrid(config) : undefined,
          { ...config.redis, prefixOf: redisPrefixOf(config) },
          // The API only notes who read; deliver makes the Tencent call (ImReadSync), so this process needs no Tencent key.
          config.tencent_im.enabled && config.inbox.im_read_sync.enabled,
          metrics,
        ),
    },
  ],
  async listeners(config) {
    if (!config.inbox.api_enabled) return ['inbox API off (inbox.api_enabled: false)'];
    const tls = config.inbox.api_tls;
    if (tls) (await import('./api/server.ts')).readInboxApiTls(tls);
    const guard = tls
      ? 'mutual TLS: client certificates must chain to inbox.api_tls.client_ca_file'
      : isLoopbackHost(config.inbox.api_host)
        ? 'plaintext, loopback only (development)'
        : 'REFUSED: not loopback and no api_tls';
    // Port 0 is not "off": the process listens on a free port the system picks (api_enabled: false turns it off).
    const at =
      config.inbox.api_port === 0 ? `${config.inbox.api_host}, a free port picked at start (api_port: 0)` : `${config.inbox.api_host}:${config.inbox.api_port}`;
    return [`inbox API ${at} (roles inbox-api and all; ${guard})`];
  },
  probe: async () => (await import('./probe.ts')).inboxProbe,
};
