/**
 * The inbox API flood of issue 30, as its own process (so the bench's fake-im clock is not slowed by it): `big`
 * clients looping on 4 MiB DeleteNotifications, and `concurrent` small ListNotifications kept in flight.
 * Args: <port> <seconds> <concurrent> <big> <users>. Prints the calls' outcomes as JSON.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { INBOX_PROTO } from '../src/channels/inbox/api/inbox-service.ts';

const [port, seconds, concurrent, big, users] = process.argv.slice(2).map(Number) as [number, number, number, number, number];
const pkg = grpc.loadPackageDefinition(await protoLoader.load(INBOX_PROTO, { keepCase: true, longs: String, enums: String, defaults: true })) as any;
const until = Date.now() + seconds * 1000;
const outcomes: Record<string, number> = {};
const count = (err: grpc.ServiceError | null) => {
  const key = err ? (grpc.status[err.code] ?? String(err.code)) : 'OK';
  outcomes[key] = (outcomes[key] ?? 0) + 1;
};
const clients = Array.from(
  { length: 8 },
  () => new pkg.notice.inbox.v1.InboxService(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.max_send_message_length': 8 * 1024 * 1024 }),
);
const call = (c: any, method: string, req: object) =>
  new Promise<void>((resolve) =>
    c[method](req, { deadline: Date.now() + 10_000 }, (err: grpc.ServiceError | null) => {
      count(err);
      resolve();
    }),
  );
const hugeIds = Array.from({ length: 200_000 }, (_, i) => String(1_000_000_000 + i));

await Promise.all([
  ...Array.from({ length: big }, async (_, k) => {
    while (Date.now() < until)
      await call(clients[k % clients.length], 'DeleteNotifications', { caller: { app_code: 'lalu', user_id: String(100000 + k) }, ids: hugeIds });
  }),
  ...Array.from({ length: concurrent }, async (_, k) => {
    while (Date.now() < until)
      await call(clients[k % clients.length], 'ListNotifications', {
        caller: { app_code: 'lalu', user_id: String(100000 + Math.floor(Math.random() * users)) },
        page_size: 20,
      });
  }),
]);
for (const c of clients) c.close();
process.stdout.write(`${JSON.stringify(outcomes)}\n`);
