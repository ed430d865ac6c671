import { formatKey, type LedgerRow } from '../../../../src/ledger/types.ts';
import type { ChannelOutcome, DeliveryChannel } from '../../../../src/channels/types.ts';
import type { WebhookConfig } from './config.ts';

/**
 * A third channel, as an example of what a channel is: POST the notice to an HTTP endpoint. The ledger key is the
 * Idempotency-Key, so a resend after a crash is deduplicated by the receiver; 5xx and network errors are retried,
 * other 4xx are permanent.
 */
export function webhookChannel(settings: WebhookConfig): DeliveryChannel {
  return {
    name: 'webhook',
    async send(row: LedgerRow): Promise<ChannelOutcome> {
      const started = Date.now();
      const latencyMs = () => Date.now() - started;
      let response: Response;
      try {
        response = await fetch(settings.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': formatKey(row) },
          body: JSON.stringify({ user_id: row.userId, notice_kind: row.noticeKind, event_type: row.eventType, payload: row.payload }),
          signal: AbortSignal.timeout(settings.request_timeout),
        });
      } catch (err) {
        const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
        return { kind: 'retry', code: cause, message: `webhook unreachable (${cause})`, latencyMs: latencyMs() };
      }
      const text = (await response.text()).slice(0, 200);
      if (response.ok) return { kind: 'delivered', ref: response.headers.get('x-delivery-id') ?? formatKey(row), latencyMs: latencyMs() };
      const code = `HTTP_${response.status}`;
      if (response.status >= 500 || response.status === 429)
        return { kind: 'retry', code, message: `webhook answered ${response.status}: ${text}`, latencyMs: latencyMs() };
      return { kind: 'permanent', code, message: `webhook refused the notice (${response.status}): ${text}`, latencyMs: latencyMs() };
    },
  };
}
