import type { Logger } from 'pino';
import { WakeableSleep } from '../app/wakeable-sleep.ts';
import type { FactRecorder } from '../intake/fact-recorder.ts';
import type { ParsedMessage, SourceFact } from '../facts/types.ts';

export type { ParsedMessage } from '../facts/types.ts';
import type { RejectStore } from '../intake/reject-store.ts';
import { describeError } from '../platform/errors.ts';
import type { MqMessage, MqReceiver } from './receiver.ts';
import type { NoticeMetrics } from '../observability/metrics.ts';

export interface MqConsumerLoopOptions {
  sourceName: string;
  createReceiver: () => Promise<MqReceiver>;
  parse: (body: Buffer, recordedAtMs: number) => ParsedMessage;
  recorder: FactRecorder;
  rejects: RejectStore;
  batchSize: number;
  invisibleMs: number;
  maxReconsumeTimes: number;
  logger: Logger;
  metrics?: NoticeMetrics;
}

export interface MqConsumerStats {
  received: number;
  acked: number;
  rejected: number;
  recordFailures: number;
  receiveFailures: number;
  reconnects: number;
  lastMessageAtMs: number | null;
}

/** Consecutive receive failures after which the client is thrown away and a new one connects. */
const RECONNECT_AFTER_FAILURES = 5;

/**
 * Receive → record → ack. A message is acked only once its ledger row is committed and its job enqueued, or once it
 * is recorded as rejected; anything else is left to come back after its invisible duration. The loop itself never
 * dies: proxy errors back off and, when they persist, reconnect with a fresh client.
 */
export class MqConsumerLoop {
  readonly stats: MqConsumerStats = { received: 0, acked: 0, rejected: 0, recordFailures: 0, receiveFailures: 0, reconnects: 0, lastMessageAtMs: null };
  private receiver: MqReceiver | null = null;
  private running = false;
  private loop: Promise<void> | null = null;
  private handling: Promise<void> = Promise.resolve();
  private readonly pause = new WakeableSleep();
  private readonly log: Logger;

  constructor(private readonly options: MqConsumerLoopOptions) {
    this.log = options.logger.child({ source: options.sourceName, entry: 'rocketmq' });
  }

  get isRunning(): boolean {
    return this.running;
  }

  get connected(): boolean {
    return this.receiver !== null;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.pause.wake();
    await this.handling; // let a batch in hand be recorded and acked
    const receiver = this.receiver;
    this.receiver = null;
    await receiver?.shutdown(); // also ends an in-flight long poll
    await this.loop;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      if (!this.receiver) {
        let receiver: MqReceiver | null = null;
        try {
          receiver = await this.options.createReceiver();
          await receiver.startup();
          if (!this.running) {
            await receiver.shutdown();
            break;
          }
          this.receiver = receiver;
          this.log.info('RocketMQ consumer connected');
        } catch (err) {
          failures++;
          const delay = backoff(failures);
          this.log.warn({ err: describeError(err), retry_in_ms: delay }, 'RocketMQ consumer startup failed');
          await this.pause.sleep(delay);
          continue;
        }
      }
      const receiver = this.receiver;
      let messages: MqMessage[];
      try {
        messages = await receiver.receive(this.options.batchSize, this.options.invisibleMs);
        failures = 0;
      } catch (err) {
        if (!this.running) break;
        failures++;
        this.stats.receiveFailures++;
        const delay = backoff(failures);
        this.log.warn({ err: describeError(err), code: (err as { code?: unknown }).code, retry_in_ms: delay }, 'RocketMQ receive failed');
        if (failures >= RECONNECT_AFTER_FAILURES && this.receiver === receiver) {
          this.receiver = null;
          this.stats.reconnects++;
          await receiver.shutdown();
        }
        await this.pause.sleep(delay);
        continue;
      }
      if (messages.length > 0) {
        this.handling = this.handle(receiver, messages);
        await this.handling;
      }
    }
  }

  private async handle(receiver: MqReceiver, messages: MqMessage[]): Promise<void> {
    const now = Date.now();
    this.stats.received += messages.length;
    this.stats.lastMessageAtMs = now;
    const facts: Array<{ message: MqMessage; fact: SourceFact }> = [];
    for (const message of messages) {
      const parsed = this.options.parse(message.body, now);
      if (parsed.kind === 'poison') {
        await this.reject(receiver, message, `poison message: ${parsed.reason}`);
      } else {
        facts.push({ message, fact: parsed.fact });
      }
    }
    if (facts.length === 0) return;
    try {
      await this.options.recorder.record(facts.map((f) => f.fact));
    } catch (err) {
      this.stats.recordFailures++;
      this.options.metrics?.mqMessages.inc({ source: this.options.sourceName, result: 'record_failed' }, facts.length);
      const reason = describeError(err);
      this.log.warn({ err: reason, messages: facts.length }, 'could not record MQ messages (MySQL or Redis down?); not acking, they will be redelivered');
      for (const { message } of facts) {
        if (message.deliveryAttempt > this.options.maxReconsumeTimes) {
          await this.reject(receiver, message, `still failing after ${message.deliveryAttempt} deliveries: ${reason}`);
        }
      }
      return;
    }
    for (const { message } of facts) await this.ack(receiver, message);
  }

  /** Records the message where operators can see it, then acks it; if even that fails, it stays unacked. */
  private async reject(receiver: MqReceiver, message: MqMessage, reason: string): Promise<void> {
    try {
      await this.options.rejects.record(
        {
          sourceName: this.options.sourceName,
          messageId: message.messageId,
          topic: message.topic,
          tag: message.tag,
          keys: message.keys,
          deliveryAttempt: message.deliveryAttempt,
          rawBody: message.body,
          reason,
        },
        Date.now(),
      );
    } catch (err) {
      this.log.warn({ message_id: message.messageId, err: describeError(err) }, 'could not record rejected message; leaving it unacked');
      return;
    }
    this.stats.rejected++;
    this.options.metrics?.mqMessages.inc({ source: this.options.sourceName, result: 'rejected' });
    this.log.warn(
      { message_id: message.messageId, keys: message.keys, delivery_attempt: message.deliveryAttempt, reason },
      'MQ message rejected and recorded in notice_rejected_messages',
    );
    await this.ack(receiver, message);
  }

  private async ack(receiver: MqReceiver, message: MqMessage): Promise<void> {
    try {
      await receiver.ack(message);
      this.stats.acked++;
      this.options.metrics?.mqMessages.inc({ source: this.options.sourceName, result: 'acked' });
    } catch (err) {
      // The ledger row exists; a redelivery is absorbed by its primary key.
      this.log.warn({ message_id: message.messageId, err: describeError(err) }, 'ack failed; the message will be redelivered and deduplicated');
    }
  }
}

function backoff(failures: number): number {
  const base = Math.min(30_000, 250 * 2 ** Math.min(failures, 7));
  return Math.round(base * (0.75 + Math.random() * 0.5));
}
