import { channelModules } from '../channels/channel-set.ts';
import type { NoticeConfig } from '../config/schema.ts';

/**
 * What each listener of this config would bind and how it is guarded, after checking what parsing cannot (the TLS
 * files are read and must be PEM). Throws the same errors start-up would.
 */
export async function listenerSummary(config: NoticeConfig): Promise<string[]> {
  const lines: string[] = [];
  const at = (host: string, port: number) => (port === 0 ? 'off' : `${host}:${port}`);
  lines.push(`health http ${at(config.health.host, config.health.http_port)} (/healthz /readyz /metrics; unauthenticated, no personal data)`);
  lines.push(`health grpc ${at(config.health.host, config.health.grpc_port)} (grpc.health.v1 only)`);
  lines.push(
    `dashboard ${at(config.dashboard.host, config.dashboard.port)} (role dashboard; ${config.dashboard.auth.enabled ? 'basic auth' : 'NO AUTH (local only)'})`,
  );
  for (const module of channelModules(config)) lines.push(...((await module.listeners?.(config)) ?? []));
  return lines;
}
