import { settingsOf } from '../../../../src/modules/module-set.ts';
import type { ChannelModule } from '../../../../src/channels/types.ts';
import { webhookConfigShape, type WebhookConfig } from './config.ts';

const settings = (config: object) => settingsOf<WebhookConfig>(config, 'webhook');

/** The example third channel: one folder, and one line in test/examples/registry.ts. */
export const webhookModule: ChannelModule<typeof webhookConfigShape> = {
  name: 'webhook',
  configKey: 'webhook',
  configShape: webhookConfigShape,
  description: 'Notices POSTed to a webhook (example channel)',
  kinds: (config) => (settings(config).enabled ? settings(config).kinds : []),
  ownQueueKinds: () => [],
  concurrency: (config) => settings(config).concurrency,
  longestSendMs: (config) => settings(config).request_timeout,
  rateLimitPerSecond: () => null,
  senderProblem: (config) => (settings(config).url.startsWith('http://127.0.0.1:9/') ? 'webhook.url is not set' : null),
  create: async (ctx) => (await import('./channel.ts')).webhookChannel(settings(ctx.config)),
  probe: async () => (await import('./probe.ts')).startWebhookProbe(),
};
