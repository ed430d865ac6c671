import type { Logger } from 'pino';
import type { DeliveryChannel } from '../channels/types.ts';
import type { LedgerRepository } from '../ledger/repository.ts';
import { formatKey, type LedgerRow } from '../ledger/types.ts';
import { describeError } from '../platform/errors.ts';
import type { RevocationStore, Revocation } from './store.ts';

const UNSENT = new Set(['pending', 'retryable', 'deferred', 'failed']);
const NOT_ARRIVED = 'no notice of this fact yet: any that arrives is recorded revoked, unsent';
/** How long a revocation of a fact the ledger does not hold stays pending before it is finished as "not arrived". */
export const UNKNOWN_GRACE_MS = 10_000;

/** What one pass did with one row of a revoked fact: finished (with a note), or to look at again next pass. */
type RowStep = { done: true; note: string } | { done: false; note: string };

/**
 * Works off revocations (run by the reconciler's leader, one process at a time): per channel, a row not sent yet ends
 * revoked (no worker sends a final row); a sent one is moved to revoking — one winner — and the channel withdraws it
 * (C2C: admin_msgwithdraw by its MsgKey; the inbox: the item removed), then it ends revoked. A row being sent right
 * now, or a withdrawal the provider answered "retry", waits for the next pass; a crash between the provider's answer
 * and the record can ask the provider twice (the next pass resumes the revoking row). A push already shown cannot be
 * taken back: noted.
 */
export class Revoker {
  constructor(
    private readonly deps: {
      revocations: RevocationStore;
      ledger: LedgerRepository;
      channels: ReadonlyMap<string, DeliveryChannel>;
      logger: Logger;
      now?: () => number;
    },
  ) {}

  async workOff(limit = 100): Promise<number> {
    const now = this.deps.now ?? Date.now;
    // Ids the ledger does not know are finished in bulk, after a grace that covers an ingest batch between its
    // revocation check and its insert; the per-fact work below takes known facts only, so they never wait behind them.
    let finished = await this.deps.revocations.finishUnknown(now() - UNKNOWN_GRACE_MS, NOT_ARRIVED, now(), 10_000);
    for (const revocation of await this.deps.revocations.pendingKnown(limit)) {
      try {
        if (await this.work(revocation)) finished++;
      } catch (err) {
        this.deps.logger.warn({ err: describeError(err), event_id: revocation.sourceEventId }, 'revocation not finished this pass; retried on the next');
      }
    }
    return finished;
  }

  /** Retention: finished revocations of facts the ledger does not hold, asked before `beforeMs`. */
  purge(beforeMs: number, limit: number): Promise<number> {
    return this.deps.revocations.purge(beforeMs, limit);
  }

  private async work(revocation: Revocation): Promise<boolean> {
    const now = this.deps.now ?? Date.now;
    const rows = await this.deps.ledger.rowsOfFact(revocation);
    const steps = await Promise.all(rows.map((row) => this.step(row, revocation.requestedBy, now())));
    if (steps.some((s) => !s.done)) return false;
    if (rows.length === 0) return false; // purged meanwhile: finished with the unknown ones
    const outcome = steps.map((s, i) => `${rows[i]!.channel}: ${s.note}`).join('; ');
    await this.deps.revocations.finish(revocation, outcome, now());
    this.deps.logger.info({ event_id: revocation.sourceEventId, source: revocation.sourceName, outcome }, 'notice revoked');
    return true;
  }

  private async step(row: LedgerRow, by: string, nowMs: number): Promise<RowStep> {
    const { ledger } = this.deps;
    if (UNSENT.has(row.status)) {
      return (await ledger.revokeUnsent(row, `taken back before it was sent (by ${by})`, nowMs))
        ? { done: true, note: 'not sent' }
        : { done: false, note: 'changed meanwhile' };
    }
    if (row.status === 'delivering') return { done: false, note: 'being sent' };
    if (row.status !== 'delivered' && row.status !== 'revoking') return { done: true, note: `${row.status}, nothing to take back` };
    const channel = this.deps.channels.get(row.channel);
    if (!channel?.withdraw) return { done: true, note: 'sent; this channel cannot take it back' };
    if (row.status === 'delivered' && !(await ledger.startWithdrawal(row, nowMs))) return { done: false, note: 'changed meanwhile' };
    const result = await channel.withdraw(row);
    if (result.kind === 'retry') {
      this.deps.logger.warn({ key: formatKey(row), code: result.code }, 'withdrawal to retry on the next pass');
      return { done: false, note: `withdrawal failed for now (${result.code})` };
    }
    const note = result.kind === 'withdrawn' ? result.note : `could not be withdrawn: ${result.code} ${result.message}`;
    await ledger.recordWithdrawn(row, note, nowMs);
    return { done: true, note };
  }
}
