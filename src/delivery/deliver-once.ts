import type { Logger } from 'pino';
import type { ClaimResult } from '../ledger/repository.ts';
import { formatKey, type LedgerKey, type LedgerRow } from '../ledger/types.ts';
import { isFinalForDelivery } from '../ledger/transitions.ts';
import type { HistoryEntry } from '../ledger/history.ts';
import type { NoticeMetrics } from '../observability/metrics.ts';
import type { ChannelOutcome, DeliveryChannel } from '../channels/types.ts';
import { decideRetry } from './retry-policy.ts';
import { errorCodeLabel } from '../observability/error-code-label.ts';

/** The ledger writes one delivery needs; every one is conditional on this worker's claim. */
export interface DeliveryLedger {
  /** `dueOnly`: leave a row whose next_retry_at_ms is still ahead unclaimed (see BatchedLedger.claim). */
  claim(key: LedgerKey, options?: { dueOnly?: boolean }): Promise<ClaimResult>;
  recordDelivered(key: LedgerKey, ref: string): Promise<boolean>;
  recordSuperseded(key: LedgerKey, newerEventId: string): Promise<boolean>;
  recordExpired(key: LedgerKey, reason: string, nowMs: number): Promise<boolean>;
  recordSuppressed(key: LedgerKey, reason: string, detail: string, nowMs: number): Promise<boolean>;
  recordFailed(key: LedgerKey, code: string, message: string, nowMs: number): Promise<boolean>;
  recordUnconfirmed(key: LedgerKey, ref: string, code: string, message: string, nowMs: number): Promise<boolean>;
  recordRetryable(key: LedgerKey, code: string, message: string, nextRetryAtMs: number, nowMs: number): Promise<boolean>;
  recordSkippedRead(key: LedgerKey, detail: string, nowMs: number): Promise<boolean>;
  recordDigested(key: LedgerKey, detail: string, nowMs: number): Promise<boolean>;
  /** Not the notice's moment: the claim goes back unspent and the row waits in the ledger until `dueAtMs`. */
  recordDeferred(key: LedgerKey, reason: string, detail: string, dueAtMs: number, nowMs: number): Promise<boolean>;
  /** Gives the claim back without spending an attempt (rate limit, no slot): the row is claimable again at `retryAtMs`. */
  release(key: LedgerKey, code: string, message: string, retryAtMs: number, nowMs: number): Promise<boolean>;
}

export interface DeliveryPorts {
  ledger: DeliveryLedger;
  channel: DeliveryChannel;
  workerId: string;
  maxRetryCount(sourceName: string): number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** The channel's numeric provider codes that are documented, and so metric labels of their own (others: `other`). */
  documentedErrorCode?: (code: number) => boolean;
  /** Sends that started but never finished, after which the event is failed as poison. */
  maxUnfinishedAttempts: number;
  /** Whether this deployment serves the app (`apps`): a fact of any other is never sent. */
  servesApp(appCode: string): boolean;
  logger: Logger;
  metrics?: NoticeMetrics;
  /** The event's story beyond a first-try success (DeliveryHistory); written without waiting for it. */
  history?: (entry: HistoryEntry) => void;
  onOutcome?: (outcome: DeliveryOutcome, row: LedgerRow) => void;
  now?: () => number;
}

export type DeliveryOutcome =
  | 'delivered'
  | 'delivered_unconfirmed'
  | 'retryable'
  | 'failed'
  | 'rate_limited'
  | 'superseded'
  | 'suppressed'
  | 'skipped_read'
  | 'digested'
  | 'expired';

/** What the transport (BullMQ) must do with the job after one delivery attempt. */
export type DeliveryDecision =
  | { action: 'complete'; result: string }
  /** Come back at `untilMs` without spending one of the job's attempts. */
  | { action: 'delay'; untilMs: number }
  /** Retry after `delayMs` (already recorded in the ledger as next_retry_at_ms), spending an attempt. */
  | { action: 'retry'; delayMs: number; message: string }
  /** Finished for good (failed, dead letter): never retry this job. */
  | { action: 'fail'; message: string }
  /** The provider's rate limit answered: back in the queue at once, unspent. */
  | { action: 'rate_limited' };

/**
 * One delivery attempt over one channel: claim the ledger row, send, record the outcome — in that order, each step
 * conditional, so a stale or duplicate job can never send an event another worker owns or has finished. Plain over
 * its ports: the BullMQ adapter (deliver/processor.ts) only maps the decision onto the job.
 */
export async function deliverOnce(ports: DeliveryPorts, key: LedgerKey, options: { dueOnly?: boolean } = {}): Promise<DeliveryDecision> {
  const now = ports.now ?? Date.now;
  const { ledger, channel } = ports;
  const story = (entry: Omit<HistoryEntry, 'key' | 'actor' | 'atMs'>) => ports.history?.({ key, actor: ports.workerId, atMs: now(), ...entry });
  // A child logger per job is costly with redaction on; build it only when a line is actually written.
  let child: Logger | undefined;
  const log = () => (child ??= ports.logger.child({ event_id: key.sourceEventId, source: key.sourceName, channel: key.channel }));

  const claim = await ledger.claim(key, options);
  if (!claim.claimed) {
    const row = claim.row;
    if (!row) {
      // A job outliving its row (retention purged it, or a Redis rollback brought back an old job): nothing to send.
      log().warn({ key: formatKey(key) }, 'job has no ledger row; dropping the job');
      return { action: 'complete', result: 'no-ledger-row' };
    }
    if (isFinalForDelivery(row.status)) return { action: 'complete', result: `already-${row.status}` };
    // Left unclaimed because it waits for its retry or its moment: come back then.
    if (options.dueOnly && (row.status === 'retryable' || row.status === 'deferred') && row.nextRetryAtMs !== null && row.nextRetryAtMs > now())
      return { action: 'delay', untilMs: row.nextRetryAtMs };
    // Someone else holds a live lock (a stalled copy of this job): look again when that lock runs out.
    return { action: 'delay', untilMs: Math.max(row.lockUntilMs ?? 0, now()) + 250 };
  }
  const row = claim.row;
  // This claim is counted already; earlier claims without an attempt were sends that never finished.
  const unfinished = row.claimCount - 1 - row.attemptCount;
  if (unfinished >= ports.maxUnfinishedAttempts) {
    const message = `poison: ${unfinished} sends started but never finished (the worker died each time); stopped`;
    await ledger.recordFailed(key, 'POISON', message, now());
    story({ event: 'poison', errorCode: 'POISON', errorMessage: message });
    ports.metrics?.poisoned.inc({ source: key.sourceName, channel: key.channel });
    log().error({ unfinished }, 'event failed as poison');
    return { action: 'fail', message };
  }
  if (row.payload === null) {
    await ledger.recordFailed(key, 'NO_PAYLOAD', 'ledger row has no payload', now());
    story({ event: 'failed', errorCode: 'NO_PAYLOAD', errorMessage: 'ledger row has no payload' });
    return { action: 'fail', message: 'ledger row has no payload' };
  }

  if (!ports.servesApp(row.appCode)) {
    // Never handed to a channel: each Tencent account is one app's, and a user id means another person in another
    // app. Every channel's row of the fact ends here the same way; a requeue after the app is added sends them.
    const message = `app_code "${row.appCode}" is not configured (apps.${row.appCode}); requeue once it is added`;
    await ledger.recordFailed(key, 'UNKNOWN_APP', message, now());
    story({ event: 'failed', errorCode: 'UNKNOWN_APP', errorMessage: message });
    ports.onOutcome?.('failed', row);
    ports.metrics?.unknownApp.inc({ channel: key.channel });
    log().error({ app_code: row.appCode }, 'fact of an app this deployment does not serve; failed with UNKNOWN_APP, nothing sent');
    return { action: 'fail', message };
  }

  const outcome = await channel.send(row, { lockUntilMs: row.lockUntilMs });
  const at = now();
  const observe = (
    result: DeliveryOutcome,
    sent: Exclude<ChannelOutcome, { kind: 'superseded' | 'not_now' | 'expired' | 'suppressed' | 'deferred' | 'skipped_read' | 'digested' }>,
  ) => {
    ports.onOutcome?.(result, row);
    const m = ports.metrics;
    if (!m) return;
    m.deliveries.inc({
      source: row.sourceName,
      channel: key.channel,
      notice_kind: row.noticeKind,
      outcome: result,
      error_code: sent.kind === 'delivered' ? '' : errorCodeLabel(sent.code, ports.documentedErrorCode),
    });
    m.sendLatency.observe({ channel: key.channel, outcome: sent.kind }, sent.latencyMs / 1000);
    if (result === 'delivered' && row.sourceCreatedAtMs)
      m.endToEndLatency.observe({ source: row.sourceName, channel: key.channel }, Math.max(0, at - row.sourceCreatedAtMs) / 1000);
    if (result === 'retryable') m.retries.inc({ source: row.sourceName, channel: key.channel });
    if (result === 'rate_limited') m.rateLimitBackoffs.inc({ channel: key.channel });
  };
  const label = channel.name;
  /** A row finished without a send (superseded, suppressed, expired): recorded under our lock, told, counted. */
  const finishedUnsent = (
    result: 'superseded' | 'suppressed' | 'skipped_read' | 'digested' | 'expired',
    recorded: boolean,
    entry: { errorCode?: string; errorMessage: string },
    metricCode: string,
  ): DeliveryDecision => {
    if (!recorded) {
      log().warn(`${result}, but the ledger lock was taken over meanwhile; the other worker finishes the row`);
      return { action: 'complete', result: 'lock-lost' };
    }
    story({ event: result, ...entry });
    ports.onOutcome?.(result, row);
    ports.metrics?.deliveries.inc({ source: row.sourceName, channel: key.channel, notice_kind: row.noticeKind, outcome: result, error_code: metricCode });
    return { action: 'complete', result };
  };
  switch (outcome.kind) {
    case 'superseded': {
      const recorded = await ledger.recordSuperseded(key, outcome.newerEventId);
      if (recorded && ports.logger.isLevelEnabled('debug')) log().debug({ superseded_by: outcome.newerEventId }, 'superseded by a newer version; not sent');
      return finishedUnsent('superseded', recorded, { errorMessage: `superseded by ${outcome.newerEventId}` }, '');
    }
    case 'suppressed': {
      const code = outcome.reason.toUpperCase();
      return finishedUnsent(
        'suppressed',
        await ledger.recordSuppressed(key, outcome.reason, outcome.detail, at),
        { errorCode: code, errorMessage: outcome.detail },
        code,
      );
    }
    case 'digested':
      return finishedUnsent('digested', await ledger.recordDigested(key, outcome.detail, at), { errorCode: 'DIGEST', errorMessage: outcome.detail }, 'DIGEST');
    case 'skipped_read':
      return finishedUnsent(
        'skipped_read',
        await ledger.recordSkippedRead(key, outcome.detail, at),
        { errorCode: 'READ', errorMessage: outcome.detail },
        'READ',
      );
    case 'expired': {
      const reason = `${Math.round(outcome.ageMs / 1000)} s old, past ${row.noticeKind}'s expire_after (${Math.round(outcome.limitMs / 1000)} s)`;
      return finishedUnsent('expired', await ledger.recordExpired(key, reason, at), { errorCode: 'EXPIRED', errorMessage: reason }, '');
    }
    case 'deferred': {
      if (!(await ledger.recordDeferred(key, outcome.reason, outcome.detail, outcome.untilMs, at))) {
        log().warn('deferred, but the ledger lock was taken over meanwhile; the other worker finishes the row');
        return { action: 'complete', result: 'lock-lost' };
      }
      story({ event: 'deferred', errorCode: outcome.reason.toUpperCase(), errorMessage: outcome.detail });
      ports.metrics?.deferrals.inc({ channel: key.channel, reason: outcome.reason });
      return { action: 'delay', untilMs: outcome.untilMs };
    }
    case 'not_now': {
      // Like an over-frequency answer, this gives the claim back and spends no attempt.
      await ledger.release(key, outcome.code, outcome.message, outcome.retryAtMs, at);
      log().debug({ lock_until_ms: row.lockUntilMs, retry_at_ms: outcome.retryAtMs }, `${outcome.message}; claiming again later`);
      return { action: 'delay', untilMs: outcome.retryAtMs };
    }
    case 'delivered': {
      const recorded = await ledger.recordDelivered(key, outcome.ref);
      if (!recorded) log().warn('delivered, but the ledger lock was taken over meanwhile; the other worker records the outcome');
      // A first-try success is the common case and costs no history; a success after failures closes the story.
      else if (row.attemptCount > 0) story({ event: 'delivered', latencyMs: Math.round(outcome.latencyMs) });
      observe('delivered', outcome);
      if (ports.logger.isLevelEnabled('debug')) log().debug({ latency_ms: outcome.latencyMs }, 'delivered');
      return { action: 'complete', result: 'delivered' };
    }
    case 'unconfirmed': {
      // Final by the channel's policy: resending may show the notice twice; the operator sees the code and can requeue.
      const recorded = await ledger.recordUnconfirmed(key, outcome.ref, outcome.code, outcome.message, at);
      if (!recorded) log().warn('sent unconfirmed, but the ledger lock was taken over meanwhile');
      story({ event: 'delivered_unconfirmed', errorCode: outcome.code, errorMessage: outcome.message, latencyMs: Math.round(outcome.latencyMs) });
      observe('delivered_unconfirmed', outcome);
      log().warn({ code: outcome.code, error: outcome.message }, 'the request may have reached the provider; not resent (retry_ambiguous: false)');
      return { action: 'complete', result: 'delivered_unconfirmed' };
    }
    case 'rate_limited': {
      // The provider's whole-app limit: this event queues again at once without spending an attempt.
      await ledger.release(key, outcome.code, outcome.message, at, at);
      observe('rate_limited', outcome);
      const pace = await channel.onRateLimited?.(row);
      log().warn({ code: outcome.code, pace }, `${label} rate limit answered; every sender slows down a little`);
      return { action: 'rate_limited' };
    }
    case 'permanent': {
      await ledger.recordFailed(key, outcome.code, outcome.message, at);
      story({ event: 'failed', errorCode: outcome.code, errorMessage: outcome.message, latencyMs: Math.round(outcome.latencyMs) });
      observe('failed', outcome);
      log().warn({ code: outcome.code, error: outcome.message }, 'permanent delivery error; event failed');
      return { action: 'fail', message: `${label} ${outcome.code}: ${outcome.message}` };
    }
    case 'retry': {
      const decision = decideRetry(row.attemptCount + 1, ports.maxRetryCount(key.sourceName), ports.retryBaseMs, ports.retryMaxMs);
      if (decision.final) {
        const message = `retries exhausted after ${row.attemptCount + 1} attempts; last error: ${outcome.message}`;
        await ledger.recordFailed(key, outcome.code, message, at);
        story({ event: 'failed', errorCode: outcome.code, errorMessage: message, latencyMs: Math.round(outcome.latencyMs) });
        observe('failed', outcome);
        log().warn({ code: outcome.code }, 'retries exhausted; event failed (dead letter)');
        return { action: 'fail', message };
      }
      await ledger.recordRetryable(key, outcome.code, outcome.message, at + decision.delayMs, at);
      story({ event: 'retryable', errorCode: outcome.code, errorMessage: outcome.message, latencyMs: Math.round(outcome.latencyMs) });
      observe('retryable', outcome);
      log().info({ code: outcome.code, retry_in_ms: decision.delayMs }, 'transient delivery error; will retry');
      return { action: 'retry', delayMs: decision.delayMs, message: `${label} ${outcome.code}: ${outcome.message}` };
    }
  }
}
