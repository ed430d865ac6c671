import { z } from 'zod';
import { durationMs } from '../../../../src/config/duration.ts';
import { kindList } from '../../../../src/config/primitives.ts';

/** The webhook example's YAML block. */
export const webhook = z.strictObject({
  enabled: z.boolean().default(false),
  /** Where each notice is POSTed as JSON; the receiver dedups on the Idempotency-Key header. */
  url: z.url().default('http://127.0.0.1:9/notices'),
  kinds: kindList.default(() => ['gift_notice']),
  request_timeout: durationMs.default(2000),
  concurrency: z.number().int().min(1).max(500).default(16),
});
export type WebhookConfig = z.infer<typeof webhook>;

export const webhookConfigShape = { webhook: webhook.default(() => webhook.parse({})) };
