import type { Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import type { Queue } from 'bullmq';
import type { NoticeConfig } from '../src/config/schema.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { CursorStore } from '../src/outbox/cursor-store.ts';
import { OutboxPoller } from '../src/outbox/poller.ts';
import { OutboxReader } from '../src/outbox/reader.ts';
import { outboxNoticeModules } from '../src/notices/registry.ts';
import { RoleConfigError, type Role } from '../src/app/role.ts';
import { newWorkerId } from '../src/app/worker-id.ts';
import { enqueueDeliveries, type DeliverJobData } from '../queues/deliver-queue.ts';

/** Ingest: one poller per enabled outbox source, all writing the ledger and the deliver queue. */
export class IngestRole implements Role {
  readonly name = 'ingest';
  readonly pollers: OutboxPoller[];
  private running = false;

  constructor(config: NoticeConfig, pool: Pool, queue: Queue<DeliverJobData>, logger: Logger) {
    const ledger = new LedgerRepository(pool);
    const cursors = new CursorStore(pool);
    const owner = newWorkerId('ingest');
    const enabled = outboxNoticeModules(config).filter((m) => m.worker.enabled);
    if (enabled.length === 0) {
      throw new RoleConfigError('ingest has no source enabled: set wallet_notice_worker.enabled (or room_notice_worker.enabled) to true');
    }
    this.pollers = enabled.map(
      (m) =>
        new OutboxPoller({
          source: m.source,
          config: m.worker,
          reader: new OutboxReader(pool, m.source),
          cursors,
          ledger,
          owner,
          logger,
          enqueue: (items) => enqueueDeliveries(queue, items.map((i) => ({ ...i, maxRetryCount: m.worker.max_retry_count }))),
        }),
    );
  }

  async start(): Promise<void> {
    for (const poller of this.pollers) poller.start();
    this.running = true;
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.pollers.map((p) => p.stop()));
  }

  isRunning(): boolean {
    return this.running && this.pollers.every((p) => p.isRunning);
  }
}
