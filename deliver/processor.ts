import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Logger } from 'pino';
import type { ClaimResult, LedgerRepository } from '../src/ledger/repository.ts';
import { formatKey, type LedgerKey, type LedgerRow } from '../src/ledger/types.ts';
import { isFinalForDelivery } from '../src/ledger/transitions.ts';
import type { SendOutcome, TencentImSender } from '../src/tencent-im/client.ts';
import type { NoticeMetrics } from '../src/observability/metrics.ts';
import type { DeliverJobData } from '../queues/deliver-queue.ts';
import { decideRetry, retryDelayMs } from './retry-policy.ts';
import { RetryableDeliveryError } from './errors.ts';
import type { SourcePolicy } from '../src/notices/registry.ts';
import type { SendPacer } from './send-pacer.ts';
import type { DeliveryHistory, HistoryEntry } from '../src/ledger/history.ts';

/** The two hot-path ledger writes, coalesced across concurrent jobs (BatchedLedger in production). */
export interface HotLedger {
  claim(key: LedgerKey): Promise<ClaimResult>;
  recordDelivered(key: LedgerKey, imMsgKey: string): Promise<boolean>;
  newerVersion(row: LedgerRow): Promise<string | null>;
  recordSuperseded(key: LedgerKey, newerEventId: string): Promise<boolean>;
}

export interface DeliverProcessorDeps {
  ledger: LedgerRepository;
  hot: HotLedger;
  sender: TencentImSender;
  workerId: string;
  policyFor(sourceName: string): SourcePolicy;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Sends that started but never finished, after which the event is failed as poison. */
  maxUnfinishedAttempts: number;
  /** The app-wide send rate (SendPacer): waits for this send's slot, and backs every process off on over-frequency. */
  pacer: Pick<SendPacer, 'acquire' | 'overFrequency'>;
  /** Event types whose notice is finished without a send when a newer version is already in the ledger. */
  skipsSuperseded(eventType: string): boolean;
  /** How far ahead of its commit time a notice of this kind queues for the quota (deliver.priority). */
  priorityLeadMs(noticeKind: string): number;
  /** The longest one send can take (the HTTP timeout): a send must end within the ledger lock it holds. */
  sendTimeoutMs: number;
  logger: Logger;
  metrics?: NoticeMetrics;
  /** The event's story beyond a first-try success (DeliveryHistory); written without waiting for it. */
  history?: Pick<DeliveryHistory, 'append'>;
  now?: () => number;
  onOutcome?: (outcome: DeliveryOutcome, row: LedgerRow) => void;
}

export type DeliveryOutcome = 'delivered' | 'retryable' | 'failed' | 'rate_limited' | 'superseded';

/**
 * One delivery attempt: claim the ledger row, send, record the outcome — in that order, each step conditional,
 * so a stale or duplicate job can never send an event another worker owns or has finished.
 */
export function createDeliverProcessor(deps: DeliverProcessorDeps) {
  const now = deps.now ?? Date.now;
  const observe = (outcome: DeliveryOutcome, row: LedgerRow, sent: SendOutcome, atMs: number) => {
    deps.onOutcome?.(outcome, row);
    const m = deps.metrics;
    if (!m) return;
    m.deliveries.inc({ source: row.sourceName, notice_kind: row.noticeKind, outcome, error_code: sent.kind === 'delivered' ? '' : sent.code });
    m.sendLatency.observe({ outcome: sent.kind }, sent.latencyMs / 1000);
    if (outcome === 'delivered' && row.sourceCreatedAtMs) m.endToEndLatency.observe({ source: row.sourceName }, Math.max(0, atMs - row.sourceCreatedAtMs) / 1000);
    if (outcome === 'retryable') m.retries.inc({ source: row.sourceName });
    if (outcome === 'rate_limited') m.rateLimitBackoffs.inc();
  };

  /**
   * MySQL (or the process) failing is not the event's fault: such a job waits and comes back without spending one
   * of its attempts. Expected exits (retry, unrecoverable, delayed, rate limit) pass through unchanged.
   */
  return async function processDeliveryGuarded(job: Job<DeliverJobData>, token?: string): Promise<string> {
    try {
      return await processDelivery(job, token);
    } catch (err) {
      if (err instanceof RetryableDeliveryError || err instanceof UnrecoverableError || err instanceof DelayedError || (err as Error).message === Worker.RateLimitError().message) throw err;
      const delayMs = retryDelayMs(Math.min(job.attemptsStarted ?? 1, 8), deps.retryBaseMs, deps.retryMaxMs);
      deps.logger.warn({ event_id: job.data.sourceEventId, job_id: job.id, err: (err as Error).message?.slice(0, 300), retry_in_ms: delayMs }, 'infrastructure error during delivery; the job waits without spending an attempt');
      await job.moveToDelayed(Date.now() + delayMs, token);
      throw new DelayedError();
    }
  };

  async function processDelivery(job: Job<DeliverJobData>, token?: string): Promise<string> {
    if (!isDeliverJobData(job.data)) {
      // A ghost: the id was still queued but its hash was lost (partial Redis loss), so BullMQ hands over an empty
      // stub. Its key is unknowable from a hashed id; the reconciler re-adds the row from the ledger.
      deps.metrics?.ghostJobs.inc();
      deps.logger.debug({ job_id: job.id }, 'job without data (its Redis hash was lost); dropped, the reconciler re-adds the row');
      return 'ghost-job';
    }
    const key: LedgerKey = { sourceName: job.data.sourceName, appCode: job.data.appCode, sourceEventId: job.data.sourceEventId, channel: job.data.channel };
    const story = (entry: Omit<HistoryEntry, 'key' | 'actor' | 'atMs'>) => void deps.history?.append({ key, actor: deps.workerId, atMs: now(), ...entry });
    const policy = deps.policyFor(key.sourceName);
    // A child logger per job is costly with redaction on; build it only when a line is actually written.
    let child: Logger | undefined;
    const log = () => (child ??= deps.logger.child({ event_id: key.sourceEventId, source: key.sourceName, job_id: job.id }));

    const claim = await deps.hot.claim(key);
    if (!claim.claimed) {
      const row = claim.row;
      if (!row) {
        // A job outliving its row (retention purged it, or a Redis rollback brought back an old job): nothing to send.
        log().warn({ key: formatKey(key) }, 'job has no ledger row; dropping the job');
        return 'no-ledger-row';
      }
      if (isFinalForDelivery(row.status)) return `already-${row.status}`;
      // Someone else holds a live lock (a stalled copy of this job): look again when that lock runs out.
      const retryAt = Math.max(row.lockUntilMs ?? 0, now()) + 250;
      await job.moveToDelayed(retryAt, token);
      throw new DelayedError();
    }
    const row = claim.row;
    // This claim is counted already; earlier claims without an attempt were sends that never finished.
    const unfinished = row.claimCount - 1 - row.attemptCount;
    if (unfinished >= deps.maxUnfinishedAttempts) {
      const message = `poison: ${unfinished} sends started but never finished (the worker died each time); stopped`;
      await deps.ledger.recordFailed(key, deps.workerId, 'POISON', message, now());
      story({ event: 'poison', errorCode: 'POISON', errorMessage: message });
      deps.metrics?.poisoned.inc({ source: key.sourceName });
      log().error({ unfinished }, 'event failed as poison');
      throw new UnrecoverableError(message);
    }
    if (row.payload === null) {
      await deps.ledger.recordFailed(key, deps.workerId, 'NO_PAYLOAD', 'ledger row has no payload', now());
      story({ event: 'failed', errorCode: 'NO_PAYLOAD', errorMessage: 'ledger row has no payload' });
      throw new UnrecoverableError('ledger row has no payload');
    }

    // Obsolete already (a newer balance of the same asset is sent or on its way): finish it without spending quota.
    // Checked when its turn comes, never waited for: a notice with nothing newer goes at once.
    if (row.supersedeKey && deps.skipsSuperseded(row.eventType)) {
      const newer = await deps.hot.newerVersion(row);
      if (newer !== null) {
        if (await deps.hot.recordSuperseded(key, newer)) {
          story({ event: 'superseded', errorMessage: `superseded by ${newer}` });
          deps.onOutcome?.('superseded', row);
          deps.metrics?.deliveries.inc({ source: row.sourceName, notice_kind: row.noticeKind, outcome: 'superseded', error_code: '' });
          if (deps.logger.isLevelEnabled('debug')) log().debug({ superseded_by: newer }, 'superseded by a newer version; not sent');
          return 'superseded';
        }
        log().warn('superseded, but the ledger lock was taken over meanwhile; the other worker finishes the row');
        return 'lock-lost';
      }
    }

    // The slot comes after the claim, so nothing with a variable delay (a statement) stands between slot and send.
    // The send needs the HTTP timeout's worth of lock, or half of what the claim left when lock_ttl is shorter than
    // that (a short lock was already the operator's choice before any wait); the slot must come before that.
    const slotAskedMs = now();
    const lockNeededMs = row.lockUntilMs === null ? 0 : Math.min(deps.sendTimeoutMs, (row.lockUntilMs - slotAskedMs) / 2);
    // With the limit on, slots go to the oldest waiting events first, across deliver processes (SendPacer.acquire).
    // A kind's priority lead makes it older than it is, so it goes before other kinds' notices up to that much older.
    const age = (row.sourceCreatedAtMs ?? row.createdAtMs) - deps.priorityLeadMs(row.noticeKind);
    const slot = await deps.pacer.acquire(row.lockUntilMs === null ? Infinity : row.lockUntilMs - lockNeededMs - slotAskedMs, age);
    if (!slot.sent || (row.lockUntilMs !== null && now() + lockNeededMs > row.lockUntilMs)) {
      // More senders than slots within the lock (a low rate, a short lock_ttl), or the process stalled: another
      // worker may claim the row once the lock ends, so do not send. Like an over-frequency answer, this gives the
      // claim back and spends no attempt; it comes back about when the queue of slots has room.
      const at = now();
      const retryAt = at + (slot.sent ? 50 : slot.retryInMs);
      await deps.ledger.releaseRateLimited(key, deps.workerId, 'SEND_SLOT_WAIT', 'no send slot within the ledger lock', retryAt, at);
      log().debug({ lock_until_ms: row.lockUntilMs, retry_at_ms: retryAt }, 'no send slot within the ledger lock; claiming again later');
      await job.moveToDelayed(retryAt, token);
      throw new DelayedError();
    }
    deps.metrics?.sendSlotWait.observe((now() - slotAskedMs) / 1000);
    const outcome = await deps.sender.sendC2C({ toAccount: row.userId, ext: row.noticeKind, data: row.payload, dedupSeed: formatKey(key) });
    const at = now();
    switch (outcome.kind) {
      case 'delivered': {
        const recorded = await deps.hot.recordDelivered(key, outcome.msgKey);
        if (!recorded) log().warn('delivered, but the ledger lock was taken over meanwhile; the other worker records the outcome');
        // A first-try success is the common case and costs no history; a success after failures closes the story.
        else if (row.attemptCount > 0) story({ event: 'delivered', latencyMs: Math.round(outcome.latencyMs) });
        observe('delivered', row, outcome, at);
        if (deps.logger.isLevelEnabled('debug')) log().debug({ latency_ms: outcome.latencyMs }, 'delivered');
        return 'delivered';
      }
      case 'rate_limited': {
        // Over-frequency is the provider's whole-app limit: every sender slows a little (the pacer's shared pace),
        // and this event queues again at once without spending an attempt.
        await deps.ledger.releaseRateLimited(key, deps.workerId, outcome.code, outcome.message, at, at);
        observe('rate_limited', row, outcome, at);
        const pace = await deps.pacer.overFrequency();
        deps.metrics?.sendPace.set(pace);
        log().warn({ code: outcome.code, pace }, 'Tencent IM over-frequency; every sender slows down a little');
        // BullMQ recognises a rate-limit exit by its own error, which puts the job back in wait unspent.
        throw Worker.RateLimitError();
      }
      case 'permanent': {
        await deps.ledger.recordFailed(key, deps.workerId, outcome.code, outcome.message, at);
        story({ event: 'failed', errorCode: outcome.code, errorMessage: outcome.message, latencyMs: Math.round(outcome.latencyMs) });
        observe('failed', row, outcome, at);
        log().warn({ code: outcome.code, error: outcome.message }, 'permanent delivery error; event failed');
        throw new UnrecoverableError(`Tencent IM ${outcome.code}: ${outcome.message}`);
      }
      case 'retry': {
        const decision = decideRetry(row.attemptCount + 1, policy.maxRetryCount, deps.retryBaseMs, deps.retryMaxMs);
        if (decision.final) {
          const message = `retries exhausted after ${row.attemptCount + 1} attempts; last error: ${outcome.message}`;
          await deps.ledger.recordFailed(key, deps.workerId, outcome.code, message, at);
          story({ event: 'failed', errorCode: outcome.code, errorMessage: message, latencyMs: Math.round(outcome.latencyMs) });
          observe('failed', row, outcome, at);
          log().warn({ code: outcome.code }, 'retries exhausted; event failed (dead letter)');
          throw new UnrecoverableError(message);
        }
        await deps.ledger.recordRetryable(key, deps.workerId, outcome.code, outcome.message, at + decision.delayMs, at);
        story({ event: 'retryable', errorCode: outcome.code, errorMessage: outcome.message, latencyMs: Math.round(outcome.latencyMs) });
        observe('retryable', row, outcome, at);
        log().info({ code: outcome.code, retry_in_ms: decision.delayMs }, 'transient delivery error; will retry');
        throw new RetryableDeliveryError(`Tencent IM ${outcome.code}: ${outcome.message}`, decision.delayMs);
      }
    }
  }
}

function isDeliverJobData(data: unknown): data is DeliverJobData {
  const d = data as Partial<DeliverJobData> | null;
  return typeof d?.sourceName === 'string' && typeof d.appCode === 'string' && typeof d.sourceEventId === 'string' && typeof d.channel === 'string';
}

/** BullMQ backoff strategy: the delay the ledger already recorded, or plain exponential for infrastructure errors. */
export function ledgerBackoff(baseMs: number, maxMs: number) {
  return (attemptsMade: number, _type?: string, err?: Error): number =>
    err instanceof RetryableDeliveryError ? err.retryDelayMs : retryDelayMs(attemptsMade, baseMs, maxMs);
}
