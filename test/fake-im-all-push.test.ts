import { afterEach, describe, expect, it } from 'vitest';
import { FakeImServer } from '../src/fake-im/server.ts';
import { UserSigCache } from '../src/tencent-im/usersig.ts';

const APP = { sdkAppId: 1400000077, secretKey: 'all-push-test-secret', adminIdentifier: 'administrator' };
let fake: FakeImServer | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

/** fake-im with a clock the test moves, and a caller that signs like the real client. */
async function world(perDay = 100) {
  let now = Date.now();
  fake = new FakeImServer({ ...APP, now: () => now, allPushPerDay: perDay });
  const base = await fake.listen(0);
  const sig = new UserSigCache(APP.sdkAppId, APP.secretKey, APP.adminIdentifier, 7 * 24 * 3600 * 1000);
  const call = async (path: string, body: unknown, raw?: string) => {
    const query = new URLSearchParams({
      sdkappid: String(APP.sdkAppId),
      identifier: APP.adminIdentifier,
      usersig: sig.get(),
      random: '7',
      contenttype: 'json',
    });
    const res = await fetch(`${base}/v4/timpush/${path}?${query}`, { method: 'POST', body: raw ?? JSON.stringify(body) });
    return (await res.json()) as { ErrorCode: number; ErrorInfo: string; TaskId?: string };
  };
  return { call, base, advance: (ms: number) => void (now += ms) };
}

const OFFLINE = { PushFlag: 0, Title: 'Maintenance', Desc: 'tonight 02:00' };

describe('fake-im all-user and tag push', () => {
  it('takes one push per MsgRandom (a retry gets the same TaskId), one a second, up to the daily limit', async () => {
    const { call, advance } = await world(2);
    const first = await call('push', { From_Account: 'administrator', MsgRandom: 11, OfflinePushInfo: OFFLINE });
    expect(first.ErrorCode).toBe(0);
    expect(first.TaskId).toMatch(/^fake-task-/);
    // The same MsgRandom again (a retry after an ambiguous answer): the same task, nothing new.
    expect(await call('push', { From_Account: 'administrator', MsgRandom: 11, OfflinePushInfo: OFFLINE })).toMatchObject({
      ErrorCode: 0,
      TaskId: first.TaskId,
    });
    expect((await call('push', { MsgRandom: 12, OfflinePushInfo: OFFLINE })).ErrorCode).toBe(90024); // < 1 s apart
    advance(1000);
    expect((await call('push', { MsgRandom: 12, OfflinePushInfo: OFFLINE, Condition: { TagsOr: ['vip'] } })).ErrorCode).toBe(0);
    advance(1000);
    expect((await call('push', { MsgRandom: 13, OfflinePushInfo: OFFLINE })).ErrorCode).toBe(90047); // 2 a day here
    expect(fake!.allPushTasks().map((t) => [t.msgRandom, t.condition])).toEqual([
      [11, null],
      [12, { TagsOr: ['vip'] }],
    ]);
  });

  it('refuses what Tencent refuses, with its codes', async () => {
    const { call, advance } = await world();
    const refused = async (body: Record<string, unknown>, raw?: string) => {
      advance(1000);
      return (await call('push', body, raw)).ErrorCode;
    };
    expect(await refused({ OfflinePushInfo: OFFLINE })).toBe(90005);
    expect(await refused({ MsgRandom: 1, Condition: { TagsAnd: ['a'], AttrsOr: { city: 'sz' } } })).toBe(90039);
    expect(await refused({ MsgRandom: 2, Condition: { TagsOr: Array.from({ length: 11 }, (_, i) => `t${i}`) } })).toBe(90032);
    expect(await refused({ MsgRandom: 3, Condition: { TagsOr: ['x'.repeat(51)] } })).toBe(90020);
    expect(await refused({ MsgRandom: 4, Condition: { TagsAnd: ['a'], TagsOr: ['a', 'b'] } })).toBe(90022);
    expect(await refused({ MsgRandom: 5, Condition: { TagsOr: [''] } })).toBe(90040);
    expect(await refused({}, JSON.stringify({ MsgRandom: 6, OfflinePushInfo: { Desc: 'x'.repeat(10 * 1024) } }))).toBe(90056);
    expect(await refused({}, '{not json')).toBe(90001);
    expect(fake!.allPushTasks()).toEqual([]);
  });

  it('revokes a task once, within 24 h, at most once a second, given its OfflinePushInfo', async () => {
    const { call, advance } = await world();
    const a = (await call('push', { MsgRandom: 21, OfflinePushInfo: OFFLINE })).TaskId!;
    advance(1000);
    const b = (await call('push', { MsgRandom: 22, OfflinePushInfo: OFFLINE })).TaskId!;
    expect((await call('revoke', { TaskId: 'fake-task-nope', OfflinePushInfo: OFFLINE })).ErrorCode).toBe(90049);
    expect((await call('revoke', { TaskId: a })).ErrorCode).toBe(90053);
    expect((await call('revoke', { TaskId: a, OfflinePushInfo: OFFLINE })).ErrorCode).toBe(0);
    expect((await call('revoke', { TaskId: b, OfflinePushInfo: OFFLINE })).ErrorCode).toBe(90051); // within 1 s of the last
    advance(1000);
    expect((await call('revoke', { TaskId: a, OfflinePushInfo: OFFLINE })).ErrorCode).toBe(90050);
    advance(24 * 3600 * 1000);
    expect((await call('revoke', { TaskId: b, OfflinePushInfo: OFFLINE })).ErrorCode).toBe(90052);
    expect(fake!.allPushTasks().map((t) => t.revokedAtMs !== null)).toEqual([true, false]);
  });

  it('keeps user tags: add, replace, remove, with the per-request limits', async () => {
    const { call } = await world();
    expect((await call('add_tag', { UserTags: [{ To_Account: '10001', Tags: ['vip', 'sz'] }] })).ErrorCode).toBe(0);
    expect(fake!.tagsOf(APP.sdkAppId, '10001')).toEqual(['sz', 'vip']);
    expect((await call('add_tag', { Replace: 1, UserTags: [{ To_Account: '10001', Tags: ['bj'] }] })).ErrorCode).toBe(0);
    expect(fake!.tagsOf(APP.sdkAppId, '10001')).toEqual(['bj']);
    expect((await call('remove_tag', { UserTags: [{ To_Account: '10001', Tags: ['bj'] }] })).ErrorCode).toBe(0);
    expect(fake!.tagsOf(APP.sdkAppId, '10001')).toEqual([]);
    const many = Array.from({ length: 101 }, (_, i) => ({ To_Account: String(20000 + i), Tags: ['t'] }));
    expect((await call('add_tag', { UserTags: many })).ErrorCode).toBe(90018);
    expect((await call('add_tag', { UserTags: [{ To_Account: '1', Tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }] })).ErrorCode).toBe(90032);
    expect((await call('add_tag', { UserTags: [{ To_Account: '1', Tags: ['y'.repeat(51)] }] })).ErrorCode).toBe(90020);
  });

  it('signs like every other admin call: a bad UserSig is refused before anything is recorded', async () => {
    const { base } = await world();
    const query = new URLSearchParams({ sdkappid: String(APP.sdkAppId), identifier: APP.adminIdentifier, usersig: 'forged', random: '7', contenttype: 'json' });
    const res = (await (await fetch(`${base}/v4/timpush/push?${query}`, { method: 'POST', body: '{"MsgRandom":1}' })).json()) as { ErrorCode: number };
    expect(res.ErrorCode).toBeGreaterThanOrEqual(70001);
    expect(fake!.allPushTasks()).toEqual([]);
  });
});
