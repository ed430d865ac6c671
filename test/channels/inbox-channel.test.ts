import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createTestEnv, waitFor, type TestEnv } from '../helpers/env.ts';
import { balanceChanged, insertWalletRows, vipActivated } from '../helpers/outbox.ts';
import { insertRoomRows, kick } from '../helpers/room.ts';
import { startPipeline } from '../helpers/pipeline.ts';
import type { NoticeProcess } from '../../cli/run-roles.ts';
import { InboxStore } from '../../src/channels/inbox/store.ts';
import { InboxSweeper } from '../../src/channels/inbox/sweeper.ts';
import { requeueFailed } from '../../src/ops/requeue.ts';
import { LedgerRepository } from '../../src/ledger/repository.ts';

let env: TestEnv | undefined;
let proc: NoticeProcess | undefined;

afterEach(async () => {
  await proc?.stop();
  await env?.close();
  proc = env = undefined;
});

const rowsByChannel = async (e: TestEnv) =>
  (await e.notice.query<any[]>('SELECT channel, status, COUNT(*) AS n FROM notice_delivery_events GROUP BY channel, status ORDER BY channel, status'))[0].map(
    (r) => `${r.channel}:${r.status}:${r.n}`,
  );

describe('the inbox channel', () => {
  it('one fact becomes a C2C row and (for inbox kinds) an inbox row in the same batch; each lands once, balances stay out of the inbox', async () => {
    env = await createTestEnv({ inbox: { enabled: true }, room_notice_worker: { enabled: true, poll_interval: '50ms', lock_ttl: '3s', gap_grace: '5s' } });
    await insertWalletRows(env.owner, env.config.wallet_database, [balanceChanged(1), vipActivated(2)]);
    await insertRoomRows(env.owner, env.config.room_database, [kick(3)]);
    proc = await startPipeline(env.config);
    await waitFor(
      () => rowsByChannel(env!),
      (r) => r.join() === 'inbox:delivered:2,tencent_im_c2c:delivered:3',
      15_000,
      'three C2C and two inbox deliveries',
    );
    expect(env.fakeIm.messages()).toHaveLength(3);
    const [items] = await env.notice.query<any[]>('SELECT id, user_id, notice_kind, event_type, payload, is_read FROM notice_inbox_items ORDER BY id');
    expect(items.map((i) => [i.notice_kind, i.event_type, i.is_read])).toEqual(
      expect.arrayContaining([
        ['vip_notice', 'VipActivated', 0],
        ['room_notice', 'RoomUserKicked', 0],
      ]),
    );
    expect(items).toHaveLength(2);
    // The inbox item carries exactly the payload the C2C message did, and the ledger keeps the item id as its reference.
    const kickMsg = env.fakeIm.messages().find((m) => m.ext === 'room_notice')!;
    const kickItem = items.find((i) => i.notice_kind === 'room_notice');
    expect(kickItem.payload).toBe(kickMsg.data);
    const [refs] = await env.notice.query<any[]>("SELECT provider_ref FROM notice_delivery_events WHERE channel = 'inbox' AND notice_kind = 'room_notice'");
    expect(refs[0].provider_ref).toBe(`inbox:${kickItem.id}`);
  });

  it('a redelivery of the same fact (requeue after delivered) is the same item, not a second one', async () => {
    env = await createTestEnv({ inbox: { enabled: true } });
    await insertWalletRows(env.owner, env.config.wallet_database, [vipActivated(1)]);
    proc = await startPipeline(env.config);
    await waitFor(
      () => rowsByChannel(env!),
      (r) => r.join() === 'inbox:delivered:1,tencent_im_c2c:delivered:1',
      15_000,
    );
    // Force the ledger row back to pending and enqueue again, as a crash between insert and record would leave it.
    await env.notice.query("UPDATE notice_delivery_events SET status = 'failed' WHERE channel = 'inbox'");
    const ledger = new LedgerRepository(env.notice);
    const row = (await ledger.get({ sourceName: 'wallet_outbox', appCode: 'lalu', sourceEventId: vipActivated(1).event_id!, channel: 'inbox' }))!;
    expect(row.status).toBe('failed');
    expect((await requeueFailed(ledger, proc.queues, [row], () => 3)).requeued).toHaveLength(1);
    await waitFor(
      () => rowsByChannel(env!),
      (r) => r.join() === 'inbox:delivered:1,tencent_im_c2c:delivered:1',
      15_000,
      'inbox redelivered',
    );
    const [count] = await env.notice.query<any[]>('SELECT COUNT(*) AS n FROM notice_inbox_items');
    expect(Number(count[0].n)).toBe(1);
  });

  it('the sweeper removes items past their kind retention and keeps each written user to max_items_per_user, in bounded batches', async () => {
    env = await createTestEnv({ inbox: { enabled: true } });
    const store = new InboxStore(env.notice);
    const item = (user: string, n: number, expireAtMs: number | null) => ({
      appCode: 'lalu',
      userId: user,
      fact: { sourceName: 's', appCode: 'lalu', sourceEventId: `${user}-${n}` },
      noticeKind: 'activity_notice',
      eventType: 'SystemNotice',
      payload: '{}',
      createdAtMs: n,
      expireAtMs,
    });
    await store.insert([
      ...Array.from({ length: 25 }, (_, n) => item('u1', n, null)),
      ...Array.from({ length: 5 }, (_, n) => item('u2', n, n < 3 ? 1000 : null)),
    ]);
    const sweeper = new InboxSweeper(store, { ...env.config.inbox, max_items_per_user: 10, sweep_batch_size: 4 }, pino({ level: 'silent' }));
    sweeper.touched({ appCode: 'lalu', userId: 'u1' });
    expect(await sweeper.sweep(2000)).toEqual({ expired: 3, capped: 15 });
    const [left] = await env.notice.query<any[]>(
      'SELECT user_id, MIN(source_event_id) AS oldest, COUNT(*) AS n FROM notice_inbox_items GROUP BY user_id ORDER BY user_id',
    );
    expect(left.map((r) => [r.user_id, Number(r.n)])).toEqual([
      ['u1', 10],
      ['u2', 2],
    ]);
    // The newest ten of u1 stay.
    const [u1] = await env.notice.query<any[]>("SELECT source_event_id FROM notice_inbox_items WHERE user_id = 'u1' ORDER BY id");
    expect(u1[0].source_event_id).toBe('u1-15');
    // A second sweep with nothing written finds nothing.
    expect(await sweeper.sweep(2000)).toEqual({ expired: 0, capped: 0 });
  });
});
