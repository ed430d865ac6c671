import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestEnv, type TestEnv } from './helpers/env.ts';
import { PreferenceStore } from '../src/preferences/store.ts';
import { QuietHoursStore } from '../src/quiet-hours/store.ts';
import { serverUrlOf } from '../src/platform/mysql.ts';

let env: TestEnv;
beforeAll(async () => {
  env = await createTestEnv();
});
afterAll(async () => {
  await env.close();
});

/**
 * Every text column of notice-service's own tables, by what it holds. Identities that come from outside (owners'
 * app codes, user and event ids, broker message ids) are compared byte for byte, so they are binary; names that
 * notice-service defines and checks on the way in (sources, channels, kinds, statuses) and free text may use the
 * database's collation. A new column fails this test until it is put in one list.
 */
const IDENTITY = new Set([
  'app_code',
  'user_id',
  'source_event_id',
  'superseded_by',
  'supersede_key',
  'leader_event_id',
  'digest_key',
  'message_id',
  'fact_hash',
  'body_sha256',
  'high_water_row',
]);
const NAMES_WE_DEFINE = new Set([
  'source_name',
  'leader_source_name',
  'channel',
  'notice_kind',
  'event_type',
  'status',
  'state',
  'event',
  'via',
  'action',
  'error_code',
  'last_error_code',
  'batch_job_id',
  'locked_by',
  'lease_owner',
  'provider_ref',
  'time_zone',
]);
const FREE_TEXT = new Set([
  'payload',
  'last_error',
  'error_message',
  'reason',
  'outcome',
  'detail',
  'actor',
  'requested_by',
  'windows',
  'open_gaps',
  'ranges',
  'topic',
  'tag',
  'message_keys',
  'hash',
]);

describe('identities are compared byte for byte wherever notice-service stores them', () => {
  it('every text column is classified, and every identity column is binary', async () => {
    const { database } = serverUrlOf(env.config.mysql.url);
    const [columns] = await env.notice.query<any[]>(
      `SELECT TABLE_NAME AS t, COLUMN_NAME AS c, DATA_TYPE AS type FROM information_schema.COLUMNS
       WHERE TABLE_SCHEMA = ? AND DATA_TYPE IN ('char', 'varchar', 'binary', 'varbinary', 'text', 'tinytext', 'mediumtext', 'longtext', 'blob', 'mediumblob', 'longblob', 'json')`,
      [database],
    );
    expect(columns.length).toBeGreaterThan(50);
    const unclassified = columns.filter((r) => !IDENTITY.has(r.c) && !NAMES_WE_DEFINE.has(r.c) && !FREE_TEXT.has(r.c) && r.c !== 'raw_body');
    expect(unclassified.map((r) => `${r.t}.${r.c}`)).toEqual([]);
    const notBinary = columns.filter((r) => IDENTITY.has(r.c) && r.type !== 'varbinary' && r.type !== 'binary');
    expect(notBinary.map((r) => `${r.t}.${r.c} ${r.type}`)).toEqual([]);
  });

  it("a caller of app 'LALU' or 'lalu ' neither reads nor changes a 'lalu' user's preferences and quiet hours", async () => {
    const prefs = new PreferenceStore(env.notice);
    const quiet = new QuietHoursStore(env.notice);
    const user = '55001';
    await prefs.set([{ appCode: 'lalu', userId: user, noticeKind: 'activity_notice', channel: 'tencent_push', enabled: false }], 1);
    // Another app's caller (by case, or with a trailing space) switches "its" push back on.
    await prefs.set([{ appCode: 'LALU', userId: user, noticeKind: 'activity_notice', channel: 'tencent_push', enabled: true }], 2);
    await prefs.set([{ appCode: 'lalu ', userId: user, noticeKind: 'activity_notice', channel: 'tencent_push', enabled: true }], 3);
    expect(await prefs.forUser('lalu', user)).toEqual([
      { appCode: 'lalu', userId: user, noticeKind: 'activity_notice', channel: 'tencent_push', enabled: false, updatedAtMs: 1 },
    ]);
    expect((await prefs.forUser('LALU', user)).map((p) => p.enabled)).toEqual([true]);

    const hours = { timeZone: 'Asia/Shanghai', windows: [{ start: '22:00', end: '07:00' }] };
    await quiet.set('lalu', user, hours, 1);
    // 'lalu ' clears its own quiet hours; 'LALU' sets other ones: the 'lalu' user's stay as they were, and apply.
    await quiet.set('lalu ', user, { timeZone: 'UTC', windows: [] }, 2);
    await quiet.set('LALU', user, { timeZone: 'UTC', windows: [{ start: '01:00', end: '02:00' }] }, 3);
    expect(await quiet.get('lalu', user)).toEqual(hours);
    expect(await quiet.get('LALU', user)).toEqual({ timeZone: 'UTC', windows: [{ start: '01:00', end: '02:00' }] });
    expect(await quiet.get('lalu ', user)).toBeNull();
  });
});
