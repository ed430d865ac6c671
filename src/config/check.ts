import { readInboxApiTls } from '../channels/inbox/api/server.ts';
import { isLoopbackHost } from './loopback.ts';
import type { NoticeConfig } from './schema.ts';

/**
 * What each listener of this config would bind and how it is guarded, after checking what parsing cannot (the TLS
 * files are read and must be PEM). Throws the same errors start-up would.
 */
export function listenerSummary(config: NoticeConfig): string[] {
  const lines: string[] = [];
  const at = (host: string, port: number) => (port === 0 ? 'off' : `${host}:${port}`);
  lines.push(`health http ${at(config.health.host, config.health.http_port)} (/healthz /readyz /metrics; unauthenticated, no personal data)`);
  lines.push(`health grpc ${at(config.health.host, config.health.grpc_port)} (grpc.health.v1 only)`);
  lines.push(`dashboard ${at(config.dashboard.host, config.dashboard.port)} (role dashboard; ${config.dashboard.auth.enabled ? 'basic auth' : 'NO AUTH (local only)'})`);
  if (!config.inbox.api_enabled) {
    lines.push('inbox API off (inbox.api_enabled: false)');
  } else {
    const tls = config.inbox.api_tls;
    if (tls) readInboxApiTls(tls);
    const guard = tls ? 'mutual TLS: client certificates must chain to inbox.api_tls.client_ca_file' : isLoopbackHost(config.inbox.api_host) ? 'plaintext, loopback only (development)' : 'REFUSED: not loopback and no api_tls';
    lines.push(`inbox API ${at(config.inbox.api_host, config.inbox.api_port)} (roles inbox-api and all; ${guard})`);
  }
  return lines;
}
