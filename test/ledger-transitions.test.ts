import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import { BatchedLedger } from '../src/ledger/batched-ledger.ts';
import { DELIVERY_STATUSES, CHANNEL_TENCENT_IM_C2C, type DeliveryStatus, type LedgerKey } from '../src/ledger/types.ts';
import { STATEMENTS, isFinalForDelivery, mayApply, type LedgerStatement, type LockState } from '../src/ledger/transitions.ts';
import { enqueueDeliveries } from '../queues/deliver-queue.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let procs: NoticeProcess[] = [];
afterEach(async () => {
  for (const p of procs) await p.stop();
  procs = [];
  await env?.close();
  env = undefined;
});

const ME = 'worker-me';
const OLD = Date.now() - 3_600_000;
const LOCKS: LockState[] = ['none', 'ours', 'others_live', 'others_expired'];

/**
 * Written out by hand, not derived: which (status, lock) each statement may move. The pure `mayApply` and the SQL
 * on the real MariaDB must both agree with it, so a change to the transitions table or to a statement shows here.
 */
const EXPECTED: Record<LedgerStatement, string[]> = {
  claim: [
    'pending/none',
    'retryable/none',
    'delivering/none',
    'delivering/ours',
    'delivering/others_expired',
    // A pending/retryable row never carries a lock in practice; if one did, the status alone decides.
    'pending/ours',
    'pending/others_live',
    'pending/others_expired',
    'retryable/ours',
    'retryable/others_live',
    'retryable/others_expired',
    // A deferred row is claimable whenever a job reaches it; the quiet-hours decision runs again under the claim.
    'deferred/none',
    'deferred/ours',
    'deferred/others_live',
    'deferred/others_expired',
  ],
  recordDeferred: ['delivering/ours'],
  recordSkippedRead: ['delivering/ours'],
  recordDigested: ['delivering/ours'],
  recordDelivered: ['delivering/ours'],
  recordExpired: ['delivering/ours'],
  recordSuppressed: ['delivering/ours'],
  recordRetryable: ['delivering/ours'],
  releaseRateLimited: ['delivering/ours'],
  recordFailed: ['delivering/ours'],
  recordUnconfirmed: ['delivering/ours'],
  recordSuperseded: ['delivering/ours'],
  requeueFailed: ['failed/none', 'failed/ours', 'failed/others_live', 'failed/others_expired'],
  // A revocation takes any unsent, unlocked row; a row being sent (delivering) is left to finish first.
  revokeUnsent: ['pending', 'retryable', 'deferred', 'failed'].flatMap((s) => LOCKS.map((l) => `${s}/${l}`)),
  startWithdrawal: LOCKS.map((l) => `delivered/${l}`),
  recordWithdrawn: LOCKS.map((l) => `revoking/${l}`),
  markSending: ['delivering/ours'],
};

function lockColumns(lock: LockState, nowMs: number): [string | null, number | null] {
  switch (lock) {
    case 'none':
      return [null, null];
    case 'ours':
      return [ME, nowMs + 60_000];
    case 'others_live':
      return ['worker-other', nowMs + 60_000];
    case 'others_expired':
      return ['worker-other', nowMs - 60_000];
  }
}

function ledgerRow(id: string, status: 'pending' | 'failed' = 'pending') {
  return {
    sourceName: 'wallet_outbox',
    appCode: 'lalu',
    sourceEventId: id,
    channel: CHANNEL_TENCENT_IM_C2C,
    eventType: 'WalletBalanceChanged',
    userId: '70001',
    noticeKind: 'wallet_notice',
    status,
    payload: JSON.stringify({ event_id: id }),
    lastErrorCode: null,
    lastError: null,
    sourceRowId: 1,
    sourceCreatedAtMs: OLD,
  };
}
const keyOf = (id: string): LedgerKey => ({ sourceName: 'wallet_outbox', appCode: 'lalu', sourceEventId: id, channel: CHANNEL_TENCENT_IM_C2C });

describe('every conditional ledger statement follows the transitions table', () => {
  it('pure decision = hand-written matrix', () => {
    for (const statement of Object.keys(STATEMENTS) as LedgerStatement[]) {
      const allowed = DELIVERY_STATUSES.flatMap((s) => LOCKS.filter((l) => mayApply(statement, s, l)).map((l) => `${s}/${l}`));
      expect(allowed.sort(), statement).toEqual([...EXPECTED[statement]].sort());
    }
  });

  it('each (status, lock) × statement on the real MariaDB changes exactly the rows the matrix allows', async () => {
    env = await createTestEnv();
    const repo = new LedgerRepository(env.notice);
    const nowMs = Date.now();
    const cases = (Object.keys(STATEMENTS) as LedgerStatement[]).flatMap((statement) =>
      DELIVERY_STATUSES.flatMap((status) => LOCKS.map((lock) => ({ statement, status, lock, id: `${statement}-${status}-${lock}` }))),
    );
    await repo.insertIfAbsent(
      cases.map((c) => ledgerRow(c.id)),
      OLD,
    );
    for (const c of cases) {
      const [lockedBy, lockUntil] = lockColumns(c.lock, nowMs);
      await env.notice.query('UPDATE notice_delivery_events SET status = ?, locked_by = ?, lock_until_ms = ? WHERE source_event_id = ?', [
        c.status,
        lockedBy,
        lockUntil,
        c.id,
      ]);
    }
    const batched = new BatchedLedger(env.notice, ME, () => 30_000);
    const run: Record<LedgerStatement, (key: LedgerKey) => Promise<unknown>> = {
      claim: (key) => batched.claim(key),
      recordDelivered: (key) => batched.recordDelivered(key, 'msgkey'),
      recordRetryable: (key) => repo.recordRetryable(key, ME, '70500', 'transient', nowMs + 1000, nowMs),
      releaseRateLimited: (key) => repo.releaseRateLimited(key, ME, '90018', 'over frequency', nowMs + 1000, nowMs),
      recordDigested: (key) => repo.recordDigested(key, ME, 'in a digest', nowMs),
      recordSkippedRead: (key) => repo.recordSkippedRead(key, ME, 'read first', nowMs),
      recordDeferred: (key) => repo.recordDeferred(key, ME, 'quiet_hours', 'deferred until 08:00 Asia/Shanghai (quiet hours)', nowMs + 60_000, nowMs),
      recordFailed: (key) => repo.recordFailed(key, ME, '90001', 'permanent', nowMs),
      recordUnconfirmed: (key) => repo.recordUnconfirmed(key, ME, 'push:task', 'ETIMEDOUT', 'timeout after the request was sent', nowMs),
      recordSuperseded: (key) => batched.recordSuperseded(key, 'newer-event'),
      recordExpired: (key) => repo.recordExpired(key, ME, 'too old', nowMs),
      recordSuppressed: (key) => repo.recordSuppressed(key, ME, 'preference', 'turned off', nowMs),
      requeueFailed: (key) => repo.requeueFailed([key], nowMs),
      revokeUnsent: (key) => repo.revokeUnsent(key, 'taken back', nowMs),
      startWithdrawal: (key) => repo.startWithdrawal(key, nowMs),
      recordWithdrawn: (key) => repo.recordWithdrawn(key, 'withdrawn', nowMs),
      markSending: (key) => repo.markSending([key], ME, 'push-sending:data', nowMs),
    };
    const changed: Record<string, string[]> = {};
    for (const c of cases) {
      await run[c.statement](keyOf(c.id));
      const row = (await repo.get(keyOf(c.id)))!;
      if (row.updatedAtMs !== OLD) (changed[c.statement] ??= []).push(`${c.status}/${c.lock}`);
    }
    for (const statement of Object.keys(STATEMENTS) as LedgerStatement[]) {
      expect((changed[statement] ?? []).sort(), statement).toEqual([...EXPECTED[statement]].sort());
    }
  });

  it('a duplicate job for a finished row or one under another live lock sends nothing', async () => {
    env = await createTestEnv({ reconciler: { enabled: false } });
    const repo = new LedgerRepository(env.notice);
    const finals = DELIVERY_STATUSES.filter((s) => isFinalForDelivery(s));
    expect(finals).toEqual(expect.arrayContaining(['delivered', 'failed', 'superseded']));
    const blocked: Array<{ id: string; status: DeliveryStatus; lockedBy: string | null; lockUntil: number | null }> = [
      ...finals.map((status) => ({ id: `dup-${status}`, status, lockedBy: null, lockUntil: null })),
      { id: 'dup-locked', status: 'delivering' as const, lockedBy: 'worker-other', lockUntil: Date.now() + 120_000 },
    ];
    await repo.insertIfAbsent([...blocked.map((b) => ledgerRow(b.id)), ledgerRow('dup-sentinel')], OLD);
    for (const b of blocked) {
      await env.notice.query('UPDATE notice_delivery_events SET status = ?, locked_by = ?, lock_until_ms = ? WHERE source_event_id = ?', [
        b.status,
        b.lockedBy,
        b.lockUntil,
        b.id,
      ]);
    }
    const proc = await startPipeline(env.config, ['deliver']);
    procs.push(proc);
    // The blocked jobs go first; the sentinel after them shows the worker has been through them.
    await enqueueDeliveries(
      proc.queues,
      blocked.map((b) => ({ key: keyOf(b.id), eventType: 'WalletBalanceChanged', noticeKind: 'wallet_notice', maxRetryCount: 3 })),
    );
    await new Promise((r) => setTimeout(r, 300));
    await enqueueDeliveries(proc.queues, [{ key: keyOf('dup-sentinel'), eventType: 'WalletBalanceChanged', noticeKind: 'wallet_notice', maxRetryCount: 3 }]);
    await waitFor(
      async () => env!.fakeIm.messages().length,
      (n) => n >= 1,
      15_000,
      'the sentinel sent',
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(env.fakeIm.messages().map((m) => JSON.parse(m.data).event_id)).toEqual(['dup-sentinel']);
    for (const b of blocked) expect((await repo.get(keyOf(b.id)))!.status).toBe(b.status);
  });
});
