import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { OfflinePushConfig } from '../../tencent-im/config.ts';
import { CHANNEL_TENCENT_PUSH, formatKey, type LedgerRow } from '../../ledger/types.ts';
import type { NoticeMetrics } from '../../observability/metrics.ts';
import { renderOfflinePush, withDigestCount, type OfflinePushInfo } from '../../tencent-im/offline-push.ts';
import type { PushBatchOutcome, TencentPushSender } from '../../tencent-im/push-client.ts';
import type { SendPacer } from '../../tencent-im/send-pacer.ts';
import { slotWithinLock } from '../../delivery/send-helpers/slot-within-lock.ts';
import type { ChannelOutcome, DeliveryChannel, SendContext } from '../types.ts';

export interface TencentPushDeps {
  sender: TencentPushSender;
  pacer: Pick<SendPacer, 'acquire' | 'overFrequency'>;
  offlinePush: OfflinePushConfig;
  fromAccount: string;
  maxAccounts: number;
  lingerMs: number;
  /** Resend when the request may have reached Tencent (a resend may show twice on the phone). */
  retryAmbiguous: boolean;
  /** The longest one call can take (the HTTP timeout): a call must end within every ledger lock it carries. */
  sendTimeoutMs: number;
  /**
   * Notes in the ledger, under the rows' locks, that a call carrying them is about to go out (LedgerRepository
   * markSending); returns the rows it marked. A process killed mid-call leaves the mark for the next claim to see.
   */
  markSending?(rows: readonly LedgerRow[], ref: string): Promise<readonly LedgerRow[]>;
  /** Pushes accepted lately (RecentPushes): a row among them was pushed before its ledger row was lost, and is not sent again. */
  recent?: { sent(rows: readonly LedgerRow[]): Promise<Set<string>>; note(rows: readonly LedgerRow[]): Promise<void> };
  metrics?: NoticeMetrics;
  /** The app_code whose Tencent app this sender is (a metric label). */
  app: string;
  now?: () => number;
}

interface Waiting {
  row: LedgerRow;
  lockUntilMs: number | null;
  /** When the notice stops being worth showing (deliver.expire_after), or null. */
  expiresAtMs: number | null;
  resolve(outcome: ChannelOutcome): void;
  /** MySQL or Redis failed around the call: the job waits without spending an attempt. */
  reject(err: unknown): void;
}

/** provider_ref of a row whose call went out and whose answer was never recorded (the sender died mid-call). */
const SENDING_MARK = 'push-sending:';

interface Group {
  info: OfflinePushInfo;
  waiting: Waiting[];
  draining: boolean;
}

/** ≤ 64 bytes that name the ledger rows of one call, for Push callbacks and traces (a one-row call: its key's digest). */
export function dataIdOf(rows: readonly LedgerRow[]): string {
  return createHash('sha256').update(rows.map(formatKey).sort().join('\n')).digest('hex');
}

/**
 * Phone pushes through TIMPush `v4/timpush/batch`. Rows whose rendered push is identical (one SystemNotice to many
 * users, each its own fact) wait together and go as one call of up to `maxAccounts` accounts: a call takes whatever
 * has gathered when its send slot comes, so the busier the quota, the fuller the calls. Each row still gets its own
 * outcome from the answer's ErrorList.
 */
export function tencentPushChannel(deps: TencentPushDeps): DeliveryChannel {
  const now = deps.now ?? Date.now;
  const groups = new Map<string, Group>();

  async function drain(key: string, group: Group): Promise<void> {
    group.draining = true;
    try {
      // A short linger lets identical pushes of the same moment share the first call too.
      if (group.waiting.length < deps.maxAccounts && deps.lingerMs > 0) await sleep(deps.lingerMs);
      while (group.waiting.length > 0) {
        const soonestLock = Math.min(...group.waiting.map((w) => w.lockUntilMs ?? Infinity));
        const oldest = Math.min(...group.waiting.map((w) => w.row.sourceCreatedAtMs ?? w.row.createdAtMs));
        // As for C2C, against the soonest lock of the call; rows whose lock would end first go back unspent.
        const slot = await slotWithinLock(deps.pacer, {
          lockUntilMs: soonestLock === Infinity ? null : soonestLock,
          sendTimeoutMs: deps.sendTimeoutMs,
          ageMs: oldest,
          now,
        });
        if (slot.granted) deps.metrics?.sendSlotWait.observe({ channel: CHANNEL_TENCENT_PUSH, app: deps.app }, (slot.atMs - slot.askedAtMs) / 1000);
        const taken = group.waiting.splice(0);
        const [sendable, late] = partition(taken, (w) => slot.fits(w.lockUntilMs));
        for (const w of late) w.resolve({ kind: 'not_now', code: 'SEND_SLOT_WAIT', message: 'no push slot within the ledger lock', retryAtMs: slot.retryAtMs });
        if (sendable.length === 0) continue;
        // One account once per call; a second row for the same account (another fact, same text) waits for the next.
        const seen = new Set<string>();
        const call: Waiting[] = [];
        for (const w of sendable) {
          if (call.length < deps.maxAccounts && !seen.has(w.row.userId)) {
            seen.add(w.row.userId);
            call.push(w);
          } else group.waiting.push(w);
        }
        let sending = call;
        try {
          const dataId = dataIdOf(call.map((w) => w.row));
          if (deps.markSending) {
            const marked = new Set(
              (
                await deps.markSending(
                  call.map((w) => w.row),
                  `${SENDING_MARK}${dataId}`,
                )
              ).map(formatKey),
            );
            const [ours, lost] = partition(call, (w) => marked.has(formatKey(w.row)));
            // Another worker took these over after their locks ran out; it records them.
            for (const w of lost)
              w.resolve({ kind: 'not_now', code: 'LOCK_LOST', message: 'the ledger lock was taken over before the push went out', retryAtMs: now() + 50 });
            sending = ours;
            if (sending.length === 0) continue;
          }
          if (deps.recent) {
            const pushed = await deps.recent.sent(sending.map((w) => w.row));
            const [again, fresh] = partition(sending, (w) => pushed.has(formatKey(w.row)));
            for (const w of again) w.resolve({ kind: 'delivered', ref: 'push:sent-before-ledger-loss', latencyMs: 0 });
            sending = fresh;
            if (sending.length === 0) continue;
          }
          const rows = sending.map((w) => w.row);
          const outcome = await deps.sender.batch({
            fromAccount: deps.fromAccount,
            accounts: rows.map((r) => r.userId),
            info: group.info,
            msgRandom: parseInt(dataId.slice(0, 8), 16),
            dataId,
            ...offlineStorage(sending, now()),
          });
          deps.metrics?.pushBatchAccounts.observe(sending.length);
          const outcomes = sending.map((w) => outcomeFor(outcome, w.row, deps.retryAmbiguous));
          // Noted before the rows are resolved: once the ledger says delivered, a lost ledger must find the note.
          await deps.recent?.note(sending.filter((_, i) => outcomes[i]!.kind === 'delivered').map((w) => w.row)).catch(() => undefined);
          sending.forEach((w, i) => w.resolve(outcomes[i]!));
        } catch (err) {
          for (const w of sending) w.reject(err);
        }
      }
    } catch (err) {
      // The pacer's Redis is down: every row waiting here waits again, unspent.
      for (const w of group.waiting.splice(0)) w.reject(err);
    } finally {
      group.draining = false;
      if (group.waiting.length === 0) groups.delete(key);
      else void drain(key, group);
    }
  }

  return {
    name: CHANNEL_TENCENT_PUSH,

    send(row: LedgerRow, ctx: SendContext): Promise<ChannelOutcome> {
      const rendered = renderOfflinePush(deps.offlinePush, row);
      if (!rendered.push) return Promise.resolve({ kind: 'permanent', code: 'NO_PUSH', message: `nothing to push: ${rendered.reason}`, latencyMs: 0 });
      // An earlier claim's call went out and its answer was never recorded: it may have reached the phone.
      if (row.providerRef?.startsWith(SENDING_MARK) && !deps.retryAmbiguous) {
        return Promise.resolve({
          kind: 'unconfirmed',
          ref: row.providerRef,
          code: 'SEND_INTERRUPTED',
          message: 'a deliver process stopped during the timpush/batch call carrying this row; not resent (tencent_push.retry_ambiguous: false)',
          latencyMs: 0,
        });
      }
      const info = ctx.digestCount && ctx.digestCount > 1 ? withDigestCount(rendered.info, ctx.digestCount) : rendered.info;
      const key = JSON.stringify(info);
      let group = groups.get(key);
      if (!group) {
        group = { info, waiting: [], draining: false };
        groups.set(key, group);
      }
      const joined = group;
      return new Promise<ChannelOutcome>((resolve, reject) => {
        joined.waiting.push({ row, lockUntilMs: ctx.lockUntilMs, expiresAtMs: ctx.expiresAtMs ?? null, resolve, reject });
        if (!joined.draining) void drain(key, joined);
      });
    },

    async onRateLimited(): Promise<number> {
      const pace = await deps.pacer.overFrequency();
      deps.metrics?.sendPace.set({ channel: CHANNEL_TENCENT_PUSH, app: deps.app }, pace);
      return pace;
    },

    close: () => deps.sender.close(),
  };
}

/** One row's outcome from its call's answer. */
function outcomeFor(outcome: PushBatchOutcome, row: LedgerRow, retryAmbiguous: boolean): ChannelOutcome {
  switch (outcome.kind) {
    case 'accepted': {
      const result = outcome.results.get(row.userId) ?? { kind: 'pushed' };
      if (result.kind === 'pushed') return { kind: 'delivered', ref: `push:${outcome.taskId}`, latencyMs: outcome.latencyMs };
      return { kind: result.kind, code: result.code, message: `${row.userId}: ${result.message}`, latencyMs: outcome.latencyMs };
    }
    case 'ambiguous':
      if (retryAmbiguous) return { kind: 'retry', code: outcome.code, message: outcome.message, latencyMs: outcome.latencyMs };
      return {
        kind: 'unconfirmed',
        ref: 'push:unconfirmed',
        code: outcome.code,
        message: `${outcome.message}; not resent (tencent_push.retry_ambiguous: false)`,
        latencyMs: outcome.latencyMs,
      };
    default:
      return outcome;
  }
}

/** A call's offline storage never outlives the shortest-lived notice it carries (whole seconds, at least 1). */
export function offlineStorage(call: ReadonlyArray<Pick<Waiting, 'expiresAtMs'>>, nowMs: number): { offlineStorageSeconds?: number } {
  const soonest = Math.min(...call.map((w) => w.expiresAtMs ?? Infinity));
  return soonest === Infinity ? {} : { offlineStorageSeconds: Math.max(1, Math.floor((soonest - nowMs) / 1000)) };
}

function partition<T>(items: T[], test: (item: T) => boolean): [T[], T[]] {
  const yes: T[] = [];
  const no: T[] = [];
  for (const item of items) (test(item) ? yes : no).push(item);
  return [yes, no];
}
