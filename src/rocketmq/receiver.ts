import { EventEmitter } from 'node:events';
import { SimpleConsumer, type MessageView } from 'rocketmq-client-nodejs';
import type { Logger } from 'pino';
import { withDeadline } from '../platform/deadline.ts';

/** One received message, as the consumer loop needs it. */
export interface MqMessage {
  messageId: string;
  topic: string;
  tag: string;
  keys: string[];
  body: Buffer;
  /** 1 on the first delivery. */
  deliveryAttempt: number;
  view: MessageView;
}

/** The narrow port the consumer loop uses; the RocketMQ adapter below is its production implementation. */
export interface MqReceiver {
  startup(): Promise<void>;
  receive(maxMessages: number, invisibleMs: number): Promise<MqMessage[]>;
  ack(message: MqMessage): Promise<void>;
  shutdown(): Promise<void>;
}

export interface RocketMqReceiverOptions {
  endpoints: string;
  namespace: string;
  accessKey: string;
  secretKey: string;
  ssl: boolean;
  requestTimeoutMs: number;
  startupTimeoutMs: number;
  topic: string;
  consumerGroup: string;
  awaitDurationMs: number;
}

/**
 * `rocketmq-client-nodejs` SimpleConsumer behind MqReceiver, with workarounds for its 1.0.8 defects:
 * - startup() and shutdown() have no timeout (startup waits forever for a settings reply): both are raced
 *   against `startupTimeoutMs`.
 * - shutdown() stops half-way when NotifyClientTermination fails (proxy down), leaving a timer and a telemetry
 *   reconnect loop that keep the process alive: the termination notice is made best-effort, so the rest of
 *   shutdown (telemetry release, channel close) always runs.
 * - at shutdown it strips every listener from its telemetry stream and then closes the channel, which cancels
 *   that stream: the CANCELLED error then has no listener and crashes the process. Each telemetry stream keeps
 *   a no-op error listener through removeAllListeners().
 * - a telemetry stream that failed re-opens itself a second later, forever, even after shutdown() (with the proxy
 *   down this is an endless reconnect loop that keeps the process alive): once we shut down, the client gets an
 *   inert stream that never fails, so the loop ends.
 * - its default logger writes to ~/logs and shutdown() closes whatever logger it has: we pass a pino-backed
 *   logger without close().
 */
export class RocketMqReceiver implements MqReceiver {
  private readonly consumer: SimpleConsumer;
  private closed = false;

  constructor(
    private readonly options: RocketMqReceiverOptions,
    private readonly logger: Logger,
  ) {
    const clientLog = logger.child({ component: 'rocketmq-client' });
    this.consumer = new SimpleConsumer({
      endpoints: options.endpoints,
      namespace: options.namespace,
      sslEnabled: options.ssl,
      requestTimeout: options.requestTimeoutMs,
      ...(options.accessKey ? { sessionCredentials: { accessKey: options.accessKey, accessSecret: options.secretKey } } : {}),
      consumerGroup: options.consumerGroup,
      subscriptions: new Map([[options.topic, '*']]),
      awaitDuration: options.awaitDurationMs,
      logger: {
        // The client's info lines are per-call chatter; keep them at debug.
        info: (...args: unknown[]) => clientLog.debug(format(args)),
        debug: (...args: unknown[]) => clientLog.trace(format(args)),
        warn: (...args: unknown[]) => clientLog.warn(format(args)),
        error: (...args: unknown[]) => clientLog.warn(format(args)),
      },
    });
    const rpc = (this.consumer as unknown as { rpcClientManager: RpcClientManagerInternals }).rpcClientManager;
    const telemetry = rpc.telemetry.bind(rpc);
    rpc.telemetry = (...args: unknown[]) => {
      if (this.closed) return inertStream();
      const stream = telemetry(...args);
      const removeAll = stream.removeAllListeners.bind(stream);
      const swallow = () => undefined;
      stream.removeAllListeners = ((...event: [string | symbol] | []) => {
        removeAll(...event); // forwarding `undefined` explicitly would remove no listener at all
        stream.on('error', swallow);
        return stream;
      }) as typeof stream.removeAllListeners;
      return stream;
    };
    const notify = rpc.notifyClientTermination.bind(rpc);
    rpc.notifyClientTermination = async (...args: unknown[]) => {
      try {
        return await notify(...args);
      } catch (err) {
        this.logger.warn({ err: (err as Error).message }, 'RocketMQ NotifyClientTermination failed; finishing shutdown anyway');
        return undefined;
      }
    };
  }

  async startup(): Promise<void> {
    try {
      await withDeadline(this.consumer.startup(), this.options.startupTimeoutMs, 'RocketMQ consumer startup');
    } catch (err) {
      await this.shutdown();
      throw err;
    }
  }

  async receive(maxMessages: number, invisibleMs: number): Promise<MqMessage[]> {
    const views = await this.consumer.receive(maxMessages, invisibleMs);
    return views.map((view) => ({
      messageId: view.messageId,
      topic: view.topic,
      tag: view.tag ?? '',
      keys: view.keys ?? [],
      body: view.body,
      deliveryAttempt: view.deliveryAttempt || 1,
      view,
    }));
  }

  async ack(message: MqMessage): Promise<void> {
    await this.consumer.ack(message.view);
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    try {
      await withDeadline(this.consumer.shutdown(), this.options.startupTimeoutMs, 'RocketMQ consumer shutdown');
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'RocketMQ consumer shutdown did not complete cleanly');
    }
  }
}

function inertStream(): NodeJS.EventEmitter {
  return Object.assign(new EventEmitter(), { write: () => true, end: () => undefined });
}

/** The parts of the client's (protected) RPC manager the workarounds above wrap. */
interface RpcClientManagerInternals {
  telemetry: (...args: unknown[]) => NodeJS.EventEmitter;
  notifyClientTermination: (...args: unknown[]) => Promise<unknown>;
}

/** The client logs printf-style (`'... clientId=%s', id`); keep the text, never objects that could hold headers. */
function format(args: unknown[]): string {
  const [first, ...rest] = args;
  let i = 0;
  const text = String(first).replace(/%[sdjo]/g, () => {
    const value = rest[i++];
    return value instanceof Error ? value.message : typeof value === 'object' ? safeJson(value) : String(value);
  });
  return text.slice(0, 1000);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 300) ?? '';
  } catch {
    return '[object]';
  }
}
