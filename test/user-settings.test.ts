import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './helpers/env.ts';
import { choiceKey, UserSettingsLookup } from '../src/delivery/user-settings.ts';
import { PreferenceStore } from '../src/preferences/store.ts';
import { QuietHoursStore } from '../src/quiet-hours/store.ts';
import { createMysqlPool } from '../src/platform/mysql.ts';
import type { Pool } from 'mysql2/promise';

let env: TestEnv | undefined;
let pool: Pool | undefined;
afterEach(async () => {
  await pool?.end();
  await env?.close();
  env = pool = undefined;
});

/** Statements this one-connection pool's session has sent so far (the SHOW itself included). */
async function questions(pool: Pool): Promise<number> {
  const [rows] = await pool.query<any[]>("SHOW SESSION STATUS LIKE 'Questions'");
  return Number(rows[0].Value);
}

describe("deliver's read of users' settings: preferences and quiet hours together", () => {
  it('answers a batch of users from both tables in one statement, and never from a stale copy', async () => {
    env = await createTestEnv({});
    const prefs = new PreferenceStore(env.notice);
    const quiet = new QuietHoursStore(env.notice);
    const hours = { timeZone: 'Asia/Shanghai', windows: [{ start: '22:00', end: '08:00' }] };
    await prefs.set(
      [
        { appCode: 'lalu', userId: 'u1', noticeKind: 'activity_notice', channel: 'tencent_push', enabled: false },
        { appCode: 'lalu', userId: 'u1', noticeKind: 'wallet_notice', channel: 'tencent_im_c2c', enabled: true },
        { appCode: 'hala', userId: 'u1', noticeKind: 'wallet_notice', channel: 'tencent_im_c2c', enabled: false },
      ],
      Date.now(),
    );
    await quiet.set('lalu', 'u2', hours, Date.now());
    // One connection, so the session's statement count is exactly the look-up's.
    pool = createMysqlPool(env.config.mysql.url, 1);
    const lookup = new UserSettingsLookup(pool, { preferences: true, quietHours: true });

    const before = await questions(pool);
    const [u1, u2, u3, hala1] = await Promise.all([lookup.get('lalu', 'u1'), lookup.get('lalu', 'u2'), lookup.get('lalu', 'u3'), lookup.get('hala', 'u1')]);
    expect((await questions(pool)) - before - 1).toBe(1); // minus the second SHOW
    expect([...u1.off]).toEqual([choiceKey('activity_notice', 'tencent_push')]);
    expect(u1.quietHours).toBeNull();
    expect(u2.off.size).toBe(0);
    expect(u2.quietHours).toEqual(hours);
    expect(u3).toMatchObject({ quietHours: null });
    expect(u3.off.size).toBe(0);
    expect([...hala1.off]).toEqual([choiceKey('wallet_notice', 'tencent_im_c2c')]);

    // A choice saved now counts at the next read (nothing is cached between batches).
    await prefs.set([{ appCode: 'lalu', userId: 'u3', noticeKind: 'room_notice', channel: 'tencent_im_c2c', enabled: false }], Date.now());
    await quiet.set('lalu', 'u1', hours, Date.now());
    expect([...(await lookup.get('lalu', 'u3')).off]).toEqual([choiceKey('room_notice', 'tencent_im_c2c')]);
    expect((await lookup.get('lalu', 'u1')).quietHours).toEqual(hours);

    // Only what is turned on is read.
    const quietOnly = new UserSettingsLookup(env.notice, { preferences: false, quietHours: true });
    expect((await quietOnly.get('lalu', 'u1')).off.size).toBe(0);
    expect((await quietOnly.get('lalu', 'u1')).quietHours).toEqual(hours);
  });
});
