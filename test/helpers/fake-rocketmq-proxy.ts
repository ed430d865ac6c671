import { createHash, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/**
 * An in-process RocketMQ 5 proxy speaking the real gRPC MessagingService (from the .proto files the client
 * ships), enough for the real SimpleConsumer: QueryRoute, Telemetry, ReceiveMessage (long poll), AckMessage,
 * ChangeInvisibleDuration, Heartbeat, NotifyClientTermination. Pop semantics as in the proxy: a received message
 * is invisible for its invisible duration, then comes back with delivery_attempt + 1 and a new receipt handle.
 */
const require = createRequire(import.meta.url);
const PROTO_DIR = join(dirname(require.resolve('rocketmq-client-nodejs/package.json')), 'proto');

interface StoredMessage {
  id: string;
  topic: string;
  tag: string;
  keys: string[];
  body: Buffer;
  offset: number;
  attempt: number;
  visibleAtMs: number;
  handle: string | null;
}

type Duration = { seconds?: number | string; nanos?: number } | null | undefined;
const toMs = (d: Duration) => (d ? Number(d.seconds ?? 0) * 1000 + Math.floor((d.nanos ?? 0) / 1e6) : 0);
const toDuration = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });
const ok = { code: 'OK', message: 'OK' };

export class FakeRocketMqProxy {
  private server: grpc.Server | null = null;
  private port = 0;
  private readonly messages: StoredMessage[] = [];
  private nextOffset = 0;
  private readonly waiters = new Set<() => void>();
  private readonly telemetryCalls = new Set<grpc.ServerDuplexStream<any, any>>();
  /** The next n receive calls fail with this status code (e.g. INTERNAL_SERVER_ERROR = 50001 after a proxy restart). */
  receiveFailures: { code: string; count: number } = { code: 'INTERNAL_SERVER_ERROR', count: 0 };
  readonly acked: string[] = [];
  readonly calls: Record<string, number> = {};
  /** Enforce the real proxy's limits (invisible duration ≥ 10 s). */
  strict = false;
  longPollCapMs = 2000;
  private readonly service: grpc.ServiceDefinition;

  constructor() {
    const definition = protoLoader.loadSync(join(PROTO_DIR, 'apache/rocketmq/v2/service.proto'), {
      keepCase: false,
      longs: Number,
      enums: String,
      defaults: true,
      oneofs: true,
      includeDirs: [PROTO_DIR],
    });
    const loaded = grpc.loadPackageDefinition(definition) as any;
    this.service = loaded.apache.rocketmq.v2.MessagingService.service;
  }

  get endpoint(): string {
    return `127.0.0.1:${this.port}`;
  }

  async start(port = 0): Promise<string> {
    const server = new grpc.Server();
    server.addService(this.service, this.handlers() as grpc.UntypedServiceImplementation);
    this.port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
    );
    this.server = server;
    return this.endpoint;
  }

  /** The proxy going away: every open call is cancelled and the port closes. */
  async stop(): Promise<void> {
    for (const call of this.telemetryCalls) call.end();
    this.telemetryCalls.clear();
    this.server?.forceShutdown();
    this.server = null;
    for (const wake of this.waiters) wake();
  }

  /** Coming back on the same port, with its messages (a broker keeps them across a proxy restart). */
  async restart(): Promise<void> {
    await this.stop();
    await this.start(this.port);
  }

  publish(topic: string, body: string | Buffer, options: { tag?: string; keys?: string[]; messageId?: string } = {}): string {
    const id = options.messageId ?? randomUUID().replace(/-/g, '').toUpperCase();
    this.messages.push({
      id,
      topic,
      tag: options.tag ?? '',
      keys: options.keys ?? [],
      body: Buffer.isBuffer(body) ? body : Buffer.from(body),
      offset: this.nextOffset++,
      attempt: 0,
      visibleAtMs: 0,
      handle: null,
    });
    for (const wake of this.waiters) wake();
    return id;
  }

  pending(): number {
    return this.messages.length;
  }

  attemptsOf(id: string): number {
    return this.messages.find((m) => m.id === id)?.attempt ?? -1;
  }

  private count(name: string) {
    this.calls[name] = (this.calls[name] ?? 0) + 1;
  }

  private handlers() {
    const route = (topic: string) => ({
      topic: { resourceNamespace: '', name: topic },
      id: 0,
      permission: 'READ_WRITE',
      broker: { name: 'broker-a', id: 0, endpoints: { scheme: 'IPv4', addresses: [{ host: '127.0.0.1', port: this.port }] } },
      acceptMessageTypes: ['NORMAL'],
    });
    return {
      queryRoute: (call: grpc.ServerUnaryCall<any, any>, cb: grpc.sendUnaryData<any>) => {
        this.count('queryRoute');
        cb(null, { status: ok, messageQueues: [route(call.request.topic.name)] });
      },
      heartbeat: (_call: grpc.ServerUnaryCall<any, any>, cb: grpc.sendUnaryData<any>) => {
        this.count('heartbeat');
        cb(null, { status: ok });
      },
      notifyClientTermination: (_call: grpc.ServerUnaryCall<any, any>, cb: grpc.sendUnaryData<any>) => {
        this.count('notifyClientTermination');
        cb(null, { status: ok });
      },
      telemetry: (call: grpc.ServerDuplexStream<any, any>) => {
        this.count('telemetry');
        this.telemetryCalls.add(call);
        call.on('data', (command: any) => {
          if (!command.settings) return;
          // The proxy answers with the client's settings merged with server values.
          const settings = {
            ...command.settings,
            backoffPolicy: { maxAttempts: 17, exponentialBackoff: { initial: toDuration(1000), max: toDuration(10_000), multiplier: 2 } },
          };
          // Producers get the proxy's publishing limits (a 4 MiB body), or the client refuses every send.
          if (command.settings.publishing) settings.publishing = { ...command.settings.publishing, maxBodySize: 4 * 1024 * 1024 };
          call.write({ status: ok, settings });
        });
        // End our side when the client half-closes, or its orphaned stream crashes the client process.
        call.on('end', () => {
          this.telemetryCalls.delete(call);
          call.end();
        });
        call.on('error', () => this.telemetryCalls.delete(call));
      },
      receiveMessage: (call: grpc.ServerWritableStream<any, any>) => void this.receive(call),
      // A producer (room-service's relay, or our demo) publishing into the same store the consumer pops from.
      sendMessage: (call: grpc.ServerUnaryCall<any, any>, cb: grpc.sendUnaryData<any>) => {
        this.count('sendMessage');
        const entries = call.request.messages.map((m: any) => {
          const sys = m.systemProperties ?? {};
          const id = this.publish(m.topic.name, Buffer.from(m.body), { tag: sys.tag ?? '', keys: sys.keys ?? [], messageId: sys.messageId || undefined });
          return { status: ok, messageId: id, transactionId: '', offset: this.nextOffset - 1, recallHandle: '' };
        });
        cb(null, { status: ok, entries });
      },
      ackMessage: (call: grpc.ServerUnaryCall<any, any>, cb: grpc.sendUnaryData<any>) => {
        this.count('ackMessage');
        const entries = call.request.entries.map((entry: any) => {
          const index = this.messages.findIndex((m) => m.id === entry.messageId && m.handle === entry.receiptHandle && m.visibleAtMs > Date.now());
          if (index < 0)
            return {
              messageId: entry.messageId,
              receiptHandle: entry.receiptHandle,
              status: { code: 'INVALID_RECEIPT_HANDLE', message: 'receipt handle is expired' },
            };
          this.messages.splice(index, 1);
          this.acked.push(entry.messageId);
          return { messageId: entry.messageId, receiptHandle: entry.receiptHandle, status: ok };
        });
        cb(null, { status: entries.every((e: any) => e.status.code === 'OK') ? ok : entries[0].status, entries });
      },
      changeInvisibleDuration: (call: grpc.ServerUnaryCall<any, any>, cb: grpc.sendUnaryData<any>) => {
        this.count('changeInvisibleDuration');
        const message = this.messages.find((m) => m.id === call.request.messageId && m.handle === call.request.receiptHandle);
        if (!message) return cb(null, { status: { code: 'INVALID_RECEIPT_HANDLE', message: 'receipt handle is expired' } });
        message.visibleAtMs = Date.now() + toMs(call.request.invisibleDuration);
        message.handle = randomUUID();
        cb(null, { status: ok, receiptHandle: message.handle });
      },
    };
  }

  private async receive(call: grpc.ServerWritableStream<any, any>): Promise<void> {
    this.count('receiveMessage');
    const request = call.request;
    const invisibleMs = toMs(request.invisibleDuration);
    if (this.strict && invisibleMs < 10_000) {
      call.write({ status: { code: 'ILLEGAL_INVISIBLE_TIME', message: 'invisible time is too small' } });
      call.end();
      return;
    }
    if (this.receiveFailures.count > 0) {
      this.receiveFailures.count--;
      call.write({ status: { code: this.receiveFailures.code, message: 'injected failure' } });
      call.end();
      return;
    }
    const topic = request.messageQueue.topic.name;
    const deadline = Date.now() + Math.min(toMs(request.longPollingTimeout) || this.longPollCapMs, this.longPollCapMs);
    let batch: StoredMessage[] = [];
    while (true) {
      const now = Date.now();
      batch = this.messages.filter((m) => m.topic === topic && m.visibleAtMs <= now).slice(0, request.batchSize || 32);
      if (batch.length > 0 || now >= deadline || !this.server || call.cancelled) break;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(100, deadline - now));
        this.waiters.add(wake);
      });
    }
    if (call.cancelled) return;
    if (batch.length === 0) {
      call.write({ status: { code: 'MESSAGE_NOT_FOUND', message: 'no new message' } });
      call.end();
      return;
    }
    call.write({ status: ok });
    const now = Date.now();
    for (const m of batch) {
      m.attempt++;
      m.visibleAtMs = now + invisibleMs;
      m.handle = randomUUID();
      call.write({
        message: {
          topic: { resourceNamespace: '', name: m.topic },
          userProperties: {},
          body: m.body,
          systemProperties: {
            tag: m.tag,
            keys: m.keys,
            messageId: m.id,
            bodyDigest: { type: 'MD5', checksum: createHash('md5').update(m.body).digest('hex').toUpperCase() },
            bodyEncoding: 'IDENTITY',
            messageType: 'NORMAL',
            bornTimestamp: { seconds: Math.floor(now / 1000), nanos: 0 },
            bornHost: '127.0.0.1',
            receiptHandle: m.handle,
            queueId: 0,
            queueOffset: m.offset,
            invisibleDuration: toDuration(invisibleMs),
            deliveryAttempt: m.attempt,
          },
        },
      });
    }
    call.write({ deliveryTimestamp: { seconds: Math.floor(now / 1000), nanos: 0 } });
    call.end();
  }
}
