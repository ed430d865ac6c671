import type { Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import type { NoticeConfig } from '../config/schema.ts';
import { FactRecorder } from '../intake/fact-recorder.ts';
import { LedgerRepository } from '../ledger/repository.ts';
import { mqNoticeModules } from '../notices/sources.ts';
import { channelRoutes } from '../channels/routing.ts';
import { enqueueDeliveries, type DeliverQueues } from '../../queues/deliver-queue.ts';
import type { RejectRequeueDeps } from './reject-requeue.ts';

/** For a rejected message's source_name: the MQ module's parser and a recorder that writes the ledger and the queues, as ingest does. */
export function rejectEntries(config: NoticeConfig, pool: Pool, queues: DeliverQueues, logger: Logger): RejectRequeueDeps['entryFor'] {
  const ledger = new LedgerRepository(pool);
  const modules = new Map(mqNoticeModules(config).map((m) => [m.sourceName, m]));
  return (sourceName) => {
    const module = modules.get(sourceName);
    if (!module) return null;
    const recorder = new FactRecorder(
      ledger,
      (items) =>
        enqueueDeliveries(
          queues,
          items.map((i) => ({ ...i, maxRetryCount: module.maxRetryCount })),
        ),
      channelRoutes(config),
      logger,
    );
    return { parse: module.parse, recorder };
  };
}
