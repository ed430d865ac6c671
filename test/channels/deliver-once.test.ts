import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { deliverOnce, type DeliveryLedger, type DeliveryPorts } from '../../src/delivery/deliver-once.ts';
import type { ChannelOutcome, DeliveryChannel } from '../../src/channels/types.ts';
import type { LedgerKey, LedgerRow } from '../../src/ledger/types.ts';
import { routeFact } from '../../src/channels/routing.ts';

// The delivery decision over plain ports: no Redis, no MySQL. The ledger here is an in-memory table with the same
// conditional transitions the SQL has (a claim takes a row that is not final and not locked by someone else).
const KEY: LedgerKey = { sourceName: 'room_outbox', appCode: 'lalu', sourceEventId: 'ev1', channel: 'test_channel' };

function memoryLedger(row: Partial<LedgerRow> = {}) {
  const state: LedgerRow = {
    ...KEY,
    eventType: 'RoomMemberKicked',
    userId: '10001',
    noticeKind: 'room_notice',
    status: 'pending',
    attemptCount: 0,
    claimCount: 0,
    lockedBy: null,
    lockUntilMs: null,
    nextRetryAtMs: null,
    lastErrorCode: null,
    lastError: null,
    payload: '{"x":1}',
    providerRef: null,
    sourceRowId: 1,
    sourceCreatedAtMs: 1,
    createdAtMs: 1,
    updatedAtMs: 1,
    deliveredAtMs: null,
    supersedeVersion: null,
    supersedeKey: null,
    supersededBy: null,
    ...row,
  };
  const held = () => state.status === 'delivering';
  const ledger: DeliveryLedger = {
    async claim() {
      if (['delivered', 'delivered_unconfirmed', 'failed', 'superseded', 'expired', 'suppressed'].includes(state.status) || held())
        return { claimed: false, row: { ...state } };
      Object.assign(state, { status: 'delivering', claimCount: state.claimCount + 1, lockUntilMs: Date.now() + 30_000 });
      return { claimed: true, row: { ...state } };
    },
    async recordDelivered(_k, ref) {
      if (!held()) return false;
      Object.assign(state, { status: 'delivered', providerRef: ref, attemptCount: state.attemptCount + 1 });
      return true;
    },
    async recordSuppressed() {
      if (!held()) return false;
      Object.assign(state, { status: 'suppressed' });
      return true;
    },
    async recordDigested() {
      if (!held()) return false;
      Object.assign(state, { status: 'digested' });
      return true;
    },
    async recordSkippedRead() {
      if (!held()) return false;
      Object.assign(state, { status: 'skipped_read' });
      return true;
    },
    async recordDeferred(_k, _reason, _detail, dueAtMs) {
      if (!held()) return false;
      Object.assign(state, { status: 'deferred', nextRetryAtMs: dueAtMs, claimCount: state.claimCount - 1 });
      return true;
    },
    async recordExpired() {
      if (!held()) return false;
      Object.assign(state, { status: 'expired', lastErrorCode: 'EXPIRED' });
      return true;
    },
    async recordSuperseded(_k, by) {
      if (!held()) return false;
      Object.assign(state, { status: 'superseded', supersededBy: by });
      return true;
    },
    async recordUnconfirmed(_k, ref, code, message) {
      if (!held()) return false;
      Object.assign(state, {
        status: 'delivered_unconfirmed',
        providerRef: ref,
        lastErrorCode: code,
        lastError: message,
        attemptCount: state.attemptCount + 1,
      });
      return true;
    },
    async recordFailed(_k, code, message) {
      Object.assign(state, { status: 'failed', lastErrorCode: code, lastError: message, attemptCount: state.attemptCount + 1 });
      return true;
    },
    async recordRetryable(_k, code, message, at) {
      Object.assign(state, { status: 'retryable', lastErrorCode: code, lastError: message, nextRetryAtMs: at, attemptCount: state.attemptCount + 1 });
      return true;
    },
    async release(_k, code, _m, at) {
      Object.assign(state, { status: 'retryable', lastErrorCode: code, nextRetryAtMs: at, claimCount: state.claimCount - 1 });
      return true;
    },
  };
  return { state, ledger };
}

function channelAnswering(...answers: ChannelOutcome[]): DeliveryChannel & { sends: number; slowed: number } {
  const ch = {
    name: 'test_channel',
    sends: 0,
    slowed: 0,
    async send() {
      ch.sends++;
      return answers.shift() ?? { kind: 'delivered', ref: 'r', latencyMs: 1 };
    },
    async onRateLimited() {
      ch.slowed++;
      return 0.9;
    },
  };
  return ch as DeliveryChannel & { sends: number; slowed: number };
}

function ports(ledger: DeliveryLedger, channel: DeliveryChannel, maxRetry = 2): DeliveryPorts {
  return {
    ledger,
    channel,
    workerId: 'w1',
    maxRetryCount: () => maxRetry,
    retryBaseMs: 10,
    retryMaxMs: 100,
    maxUnfinishedAttempts: 3,
    servesApp: (app) => app === KEY.appCode,
    logger: pino({ level: 'silent' }),
  };
}

describe('deliverOnce (claim → send → record) over plain ports', () => {
  it('a fact of an app the deployment does not serve is never handed to the channel: failed UNKNOWN_APP', async () => {
    const { state, ledger } = memoryLedger();
    const channel = channelAnswering();
    const decision = await deliverOnce({ ...ports(ledger, channel), servesApp: () => false }, KEY);
    expect(decision).toMatchObject({ action: 'fail', message: expect.stringContaining(`app_code "${KEY.appCode}" is not configured`) });
    expect(state).toMatchObject({ status: 'failed', lastErrorCode: 'UNKNOWN_APP' });
    expect(channel.sends).toBe(0);
  });

  it('delivers once; a duplicate job after that sends nothing', async () => {
    const { state, ledger } = memoryLedger();
    const channel = channelAnswering({ kind: 'delivered', ref: 'inbox:7', latencyMs: 2 });
    expect(await deliverOnce(ports(ledger, channel), KEY)).toEqual({ action: 'complete', result: 'delivered' });
    expect(await deliverOnce(ports(ledger, channel), KEY)).toEqual({ action: 'complete', result: 'already-delivered' });
    expect(channel.sends).toBe(1);
    expect(state.providerRef).toBe('inbox:7');
  });

  it('retries a transient answer, then dead-letters after max_retry_count', async () => {
    const { state, ledger } = memoryLedger();
    const retry = { kind: 'retry', code: '70001', message: 'busy', latencyMs: 1 } as const;
    const channel = channelAnswering(retry, retry, retry);
    const p = ports(ledger, channel, 2);
    expect((await deliverOnce(p, KEY)).action).toBe('retry');
    expect((await deliverOnce(p, KEY)).action).toBe('retry');
    const last = await deliverOnce(p, KEY);
    expect(last.action).toBe('fail');
    expect(state.status).toBe('failed');
    expect(state.lastError).toMatch(/retries exhausted after 3 attempts/);
  });

  it('an unconfirmed answer (may have reached the provider, not to be resent) is final: recorded with its code, never sent again', async () => {
    const { state, ledger } = memoryLedger();
    const channel = channelAnswering({
      kind: 'unconfirmed',
      ref: 'push:unconfirmed',
      code: 'ETIMEDOUT',
      message: 'transport error ETIMEDOUT after the request was sent',
      latencyMs: 300,
    });
    expect(await deliverOnce(ports(ledger, channel), KEY)).toEqual({ action: 'complete', result: 'delivered_unconfirmed' });
    expect(state).toMatchObject({ status: 'delivered_unconfirmed', lastErrorCode: 'ETIMEDOUT', providerRef: 'push:unconfirmed', attemptCount: 1 });
    expect(await deliverOnce(ports(ledger, channel), KEY)).toEqual({ action: 'complete', result: 'already-delivered_unconfirmed' });
    expect(channel.sends).toBe(1);
  });

  it('fails a permanent answer at once; a rate limit gives the claim back unspent and slows the channel', async () => {
    const a = memoryLedger();
    expect(
      (await deliverOnce(ports(a.ledger, channelAnswering({ kind: 'permanent', code: '90011', message: 'no such account', latencyMs: 1 })), KEY)).action,
    ).toBe('fail');
    expect(a.state).toMatchObject({ status: 'failed', lastErrorCode: '90011' });
    const b = memoryLedger();
    const channel = channelAnswering({ kind: 'rate_limited', code: '80002', message: 'over', latencyMs: 1 });
    expect(await deliverOnce(ports(b.ledger, channel), KEY)).toEqual({ action: 'rate_limited' });
    expect(b.state).toMatchObject({ status: 'retryable', attemptCount: 0 });
    expect(channel.slowed).toBe(1);
  });

  it('a superseded or not-now answer records without a send attempt; a row held by another worker is delayed, not sent', async () => {
    const a = memoryLedger();
    expect(await deliverOnce(ports(a.ledger, channelAnswering({ kind: 'superseded', newerEventId: 'ev9' })), KEY)).toEqual({
      action: 'complete',
      result: 'superseded',
    });
    expect(a.state).toMatchObject({ status: 'superseded', supersededBy: 'ev9' });
    const b = memoryLedger();
    const d = await deliverOnce(ports(b.ledger, channelAnswering({ kind: 'not_now', code: 'SEND_SLOT_WAIT', message: 'no slot', retryAtMs: 123 })), KEY);
    expect(d).toEqual({ action: 'delay', untilMs: 123 });
    expect(b.state.attemptCount).toBe(0);
    const c = memoryLedger({ status: 'delivering', lockUntilMs: Date.now() + 5000 });
    const channel = channelAnswering();
    expect((await deliverOnce(ports(c.ledger, channel), KEY)).action).toBe('delay');
    expect(channel.sends).toBe(0);
  });

  it('fails as poison after sends that kept starting but never finished', async () => {
    const { state, ledger } = memoryLedger({ claimCount: 3, attemptCount: 0 });
    const channel = channelAnswering();
    expect((await deliverOnce(ports(ledger, channel), KEY)).action).toBe('fail');
    expect(state.lastErrorCode).toBe('POISON');
    expect(channel.sends).toBe(0);
  });
});

describe('routeFact', () => {
  const table = {
    kinds: new Map<string, readonly string[]>([
      ['tencent_im_c2c', ['*']],
      ['inbox', ['activity_notice', 'room_notice']],
    ]),
    overrides: { SystemNotice: ['inbox'] },
  };
  it('routes by kind, every channel that takes it, in registry order; an event type override wins', () => {
    expect(routeFact(table, 'WalletBalanceChanged', 'wallet_notice')).toEqual(['tencent_im_c2c']);
    expect(routeFact(table, 'RoomMemberKicked', 'room_notice')).toEqual(['tencent_im_c2c', 'inbox']);
    expect(routeFact(table, 'SystemNotice', 'activity_notice')).toEqual(['inbox']);
    expect(routeFact({ ...table, kinds: new Map([['tencent_im_c2c', []]]) }, 'X', 'wallet_notice')).toEqual([]);
  });
});
