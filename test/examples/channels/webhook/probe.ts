import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChannelProbe } from '../../../../src/channels/types.ts';
import { formatKey } from '../../../../src/ledger/types.ts';

/**
 * A receiver as a webhook's consumer would run one: it keeps one notice per Idempotency-Key, refuses users it does
 * not know (422), and can be made to fail (503).
 */
export class WebhookReceiver {
  readonly received = new Map<string, { user_id: string; notice_kind: string; payload: string | null }>();
  refusedUsers = new Set<string>();
  down = false;
  private server: Server | null = null;
  url = '';

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        if (this.down) return void res.writeHead(503).end('down for the test');
        const notice = JSON.parse(body) as { user_id: string; notice_kind: string; payload: string | null };
        if (this.refusedUsers.has(notice.user_id)) return void res.writeHead(422).end(`unknown user ${notice.user_id}`);
        const key = String(req.headers['idempotency-key']);
        if (!this.received.has(key)) this.received.set(key, notice);
        res.writeHead(200, { 'x-delivery-id': `wh-${this.received.size}` }).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/notices`;
    return this.url;
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

export async function startWebhookProbe(): Promise<ChannelProbe> {
  const receiver = new WebhookReceiver();
  const url = await receiver.start();
  return {
    config: { webhook: { enabled: true, url, kinds: ['activity_notice'] } },
    kind: 'activity_notice',
    resend: 'delivered',
    async seen(_world, row) {
      const received = receiver.received.get(formatKey(row));
      return received ? [received.user_id] : [];
    },
    async outage() {
      receiver.down = true;
      return async () => {
        receiver.down = false;
      };
    },
    refusedRow(_world, row) {
      receiver.refusedUsers.add('never-known');
      return { ...row, userId: 'never-known' };
    },
    close: () => receiver.close(),
  };
}
