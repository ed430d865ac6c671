import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { insertActivityRows, type ActivityRow } from './helpers/activity.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';
import { revokeCommand } from '../src/ops/cli-ops.ts';
import { RevocationStore } from '../src/revoke/store.ts';
import { Revoker, UNKNOWN_GRACE_MS } from '../src/revoke/revoker.ts';
import { LedgerRepository } from '../src/ledger/repository.ts';
import pino from 'pino';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;
afterEach(async () => {
  await proc?.stop();
  await env?.close();
  proc = env = undefined;
});

const notice = (id: string, user: string): ActivityRow => ({
  event_id: id,
  event_type: 'SystemNotice',
  user_id: user,
  payload: { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body' },
  created_at_ms: Date.now(),
});
const revokedFact = (id: string, target: string): ActivityRow => ({ event_id: id, event_type: 'NoticeRevoked', user_id: null, payload: { event_id: target } });
const rowsOf = async (e: TestEnv, id: string) =>
  Object.fromEntries(
    (await e.notice.query<any[]>('SELECT channel, status FROM notice_delivery_events WHERE source_event_id = ? ORDER BY channel', [id]))[0].map((r) => [
      r.channel,
      r.status,
    ]),
  );
const items = async (e: TestEnv, user: string) =>
  Number((await e.notice.query<any[]>('SELECT COUNT(*) AS n FROM notice_inbox_items WHERE user_id = ?', [user]))[0][0].n);

async function world(extra: Record<string, unknown> = {}) {
  env = await createTestEnv({
    inbox: { enabled: true },
    tencent_push: { enabled: true, batch_linger: '0ms', kinds: ['activity_notice'] },
    activity_notice_worker: { enabled: true, poll_interval: '50ms' },
    reconciler: { interval: '300ms', pending_grace: '1s' },
    ...extra,
  });
}

describe('taking a notice back (NoticeRevoked, notice-service revoke)', () => {
  it('3,000 revocations of ids that never arrived do not delay a real one, finish in bulk after the grace, and age out', async () => {
    env = await createTestEnv();
    const store = new RevocationStore(env.notice);
    const ledger = new LedgerRepository(env.notice);
    const t0 = Date.now();
    let now = t0;
    const revoker = new Revoker({ revocations: store, ledger, channels: new Map(), logger: pino({ level: 'silent' }), now: () => now });
    // A notice not sent yet, and 3,000 unknown ids asked for before it.
    const fact = { sourceName: 'activity_outbox', appCode: 'lalu', sourceEventId: 'real_1' };
    await ledger.insertIfAbsent(
      [
        {
          ...fact,
          channel: 'tencent_im_c2c',
          eventType: 'SystemNotice',
          userId: '77001',
          noticeKind: 'activity_notice',
          status: 'pending',
          payload: '{}',
          lastErrorCode: null,
          lastError: null,
          sourceRowId: null,
          sourceCreatedAtMs: null,
        },
      ],
      t0,
    );
    for (let i = 0; i < 3000; i += 500)
      await env.notice.query(
        `INSERT INTO notice_revocations (source_name, app_code, source_event_id, state, requested_by, requested_at_ms) VALUES ${Array.from({ length: 500 }, () => "('activity_outbox', 'lalu', ?, 'pending', 'owner:x', ?)").join(', ')}`,
        Array.from({ length: 500 }, (_, k) => [`ghost_${i + k}`, t0 - 3000 + i + k]).flat(),
      );
    await store.request(fact, 'owner:real', t0);
    // One pass: the real revocation is worked although 3,000 older ones wait (before: the 100 oldest ghosts only).
    await revoker.workOff(100);
    expect(await rowsOf(env, 'real_1')).toEqual({ tencent_im_c2c: 'revoked' });
    expect((await store.get(fact))?.state).toBe('done');
    const pending = async () => Number((await env!.notice.query<any[]>("SELECT COUNT(*) AS n FROM notice_revocations WHERE state = 'pending'"))[0][0].n);
    expect(await pending()).toBe(3000);
    // After the grace the ghosts are finished in one statement, each saying why.
    now = t0 + UNKNOWN_GRACE_MS + 1;
    await revoker.workOff(100);
    expect(await pending()).toBe(0);
    expect((await store.get({ ...fact, sourceEventId: 'ghost_7' }))?.outcome).toMatch(/no notice of this fact yet/);
    // Retention: the ghosts age out; the revocation of a fact the ledger holds stays.
    expect(await revoker.purge(t0 + 1, 10_000)).toBe(3000);
    expect(await store.get(fact)).not.toBeNull();
    expect(Number((await env.notice.query<any[]>('SELECT COUNT(*) AS n FROM notice_revocations'))[0][0].n)).toBe(1);
  });

  it('after delivery: the C2C message withdrawn once by its MsgKey, the inbox item removed, the push noted as shown; revoking twice calls Tencent once; audited', async () => {
    await world();
    proc = await startPipeline(env!.config);
    await insertActivityRows(env!.owner, env!.config.activity_database, [notice('rv_1', '74001')]);
    await waitFor(
      () => rowsOf(env!, 'rv_1'),
      (r) => Object.values(r).every((s) => s === 'delivered') && Object.keys(r).length === 3,
      10_000,
      'delivered on three channels',
    );
    const msgKey = env!.fakeIm.messages()[0]!.msgKey;
    expect(await items(env!, '74001')).toBe(1);

    const first = await revokeCommand(env!.config, { eventId: 'rv_1', waitMs: 10_000 });
    expect(first).toMatchObject({ asked: true, state: 'done' });
    expect(first.outcome).toContain('tencent_im_c2c: C2C message');
    expect(first.outcome).toContain('inbox: inbox item removed');
    expect(first.outcome).toContain('tencent_push: sent; this channel cannot take it back');
    expect(await rowsOf(env!, 'rv_1')).toEqual({ inbox: 'revoked', tencent_im_c2c: 'revoked', tencent_push: 'delivered' });
    expect(env!.fakeIm.withdrawals()).toEqual([expect.objectContaining({ toAccount: '74001', msgKey })]);
    expect(env!.fakeIm.messages()[0]!.withdrawn).toBe(true);
    expect(await items(env!, '74001')).toBe(0);

    const again = await revokeCommand(env!.config, { eventId: 'rv_1', waitMs: 2_000 });
    expect(again).toMatchObject({ asked: false, state: 'done' });
    await new Promise((r) => setTimeout(r, 800));
    expect(env!.fakeIm.withdrawals()).toHaveLength(1);
    const [audit] = await env!.notice.query<any[]>("SELECT action, affected FROM notice_operator_actions WHERE action = 'revoke' ORDER BY id");
    expect(audit.map((a) => Number(a.affected))).toEqual([1, 0]);
  });

  it('before any delivery, by the owner in the same batch or by an operator before it arrives: nothing is sent anywhere', async () => {
    await world();
    // An operator takes it back before the fact arrives (the source and app given: the ledger does not know it yet).
    await revokeCommand(env!.config, { eventId: 'rv_2', source: 'activity_outbox', app: 'lalu', waitMs: 0 });
    // The owner commits a fact and its NoticeRevoked together.
    await insertActivityRows(env!.owner, env!.config.activity_database, [
      notice('rv_2', '74002'),
      notice('rv_3', '74003'),
      revokedFact('rv_3_revoked', 'rv_3'),
    ]);
    proc = await startPipeline(env!.config);
    await waitFor(
      async () => ({ a: await rowsOf(env!, 'rv_2'), b: await rowsOf(env!, 'rv_3') }),
      (r) => Object.keys(r.a).length === 3 && Object.keys(r.b).length === 3,
      10_000,
      'both facts recorded',
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect(await rowsOf(env!, 'rv_2')).toEqual({ inbox: 'revoked', tencent_im_c2c: 'revoked', tencent_push: 'revoked' });
    expect(await rowsOf(env!, 'rv_3')).toEqual({ inbox: 'revoked', tencent_im_c2c: 'revoked', tencent_push: 'revoked' });
    expect(env!.fakeIm.messages()).toHaveLength(0);
    expect(env!.fakeIm.pushes()).toHaveLength(0);
    expect(await items(env!, '74002')).toBe(0);
    expect(env!.fakeIm.withdrawals()).toHaveLength(0);
  });

  it('a push still waiting (escalate_after) is cancelled when the owner revokes; what was sent is withdrawn', async () => {
    await world({ tencent_push: { enabled: true, batch_linger: '0ms', kinds: ['activity_notice'], escalate_after: { activity_notice: '3s' } } });
    proc = await startPipeline(env!.config);
    await insertActivityRows(env!.owner, env!.config.activity_database, [notice('rv_4', '74004')]);
    await waitFor(
      () => rowsOf(env!, 'rv_4'),
      (r) => r.tencent_im_c2c === 'delivered' && r.inbox === 'delivered' && r.tencent_push === 'deferred',
      5_000,
      'push waiting',
    );
    await insertActivityRows(env!.owner, env!.config.activity_database, [revokedFact('rv_4_revoked', 'rv_4')]);
    await waitFor(
      () => rowsOf(env!, 'rv_4'),
      (r) => Object.values(r).every((s) => s === 'revoked'),
      10_000,
      'all revoked',
    );
    await new Promise((r) => setTimeout(r, 3500));
    expect(env!.fakeIm.pushes()).toHaveLength(0);
    expect(env!.fakeIm.withdrawals()).toHaveLength(1);
    const [[revocation]] = (await env!.notice.query<any[]>("SELECT state, requested_by FROM notice_revocations WHERE source_event_id = 'rv_4'")) as any;
    expect(revocation).toEqual({ state: 'done', requested_by: 'owner:rv_4_revoked' });
  });
});
