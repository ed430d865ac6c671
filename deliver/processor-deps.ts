import type { Queue } from 'bullmq';
import type { LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import type { DeliverJobData } from '../queues/deliver-queue.ts';
import type { DeliveryPorts } from '../src/delivery/deliver-once.ts';
import type { LedgerKey } from '../src/ledger/types.ts';
import type { NoticeMetrics } from '../src/observability/metrics.ts';

/** What the deliver processor (its job path and its batch path) is built from. */
export interface DeliverProcessorDeps {
  /** The delivery ports of each channel this worker serves, by channel name. */
  portsFor(channel: string): DeliveryPorts | undefined;
  retryBaseMs: number;
  retryMaxMs: number;
  /** The queue a batch job's rows are handed on to (retries, waits, dead letters): the batch job's own. */
  queueNamed(name: string): Queue<DeliverJobData> | undefined;
  /**
   * Rows of batch jobs sending at once, per queue (its workers' concurrency): a batch job takes one worker slot but
   * carries many rows, and this keeps the rows in flight where a job per row kept them — per queue, so one app's or
   * kind's slow rows never hold the slots of another's.
   */
  rowLimit(queueName: string): LimitFunction;
  /** The row's ledger status now (null: no row), for a dead letter that may have been requeued meanwhile. */
  rowStatus(key: LedgerKey): Promise<string | null>;
  logger: Logger;
  metrics?: NoticeMetrics;
}
