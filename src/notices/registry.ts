import type { NoticeConfig, OutboxWorkerConfig } from '../config/schema.ts';
import type { OutboxSource } from '../outbox/source.ts';
import { walletOutboxSource } from './wallet/source.ts';

/**
 * Every outbox-fed notice module, in one list. A new notice type is a new folder under src/notices/ and one
 * line here; the cursor, the ledger and the worker do not change.
 */
export interface OutboxNoticeModule {
  source: OutboxSource;
  worker: OutboxWorkerConfig;
  workerKey: string;
}

export function outboxNoticeModules(config: NoticeConfig): OutboxNoticeModule[] {
  return [
    { source: walletOutboxSource(config.wallet_database), worker: config.wallet_notice_worker, workerKey: 'wallet_notice_worker' },
  ];
}

/** Per-source delivery policy (lock TTL, retry budget) looked up by the ledger's source_name. */
export function sourcePolicies(config: NoticeConfig): Map<string, { lockTtlMs: number; maxRetryCount: number }> {
  return new Map(outboxNoticeModules(config).map((m) => [m.source.sourceName, { lockTtlMs: m.worker.lock_ttl, maxRetryCount: m.worker.max_retry_count }]));
}
