import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { startPipeline } from './helpers/pipeline.ts';
import { insertActivityRows, type ActivityRow } from './helpers/activity.ts';
import type { NoticeProcess } from '../cli/run-roles.ts';

let env: TestEnv | undefined;
let procs: NoticeProcess[] = [];
afterEach(async () => {
  for (const p of procs) await p.stop();
  await env?.close();
  procs = [];
  env = undefined;
});

const notices = (from: number, n: number): ActivityRow[] =>
  Array.from({ length: n }, (_, i) => ({
    event_id: `cap_${from + i}`,
    event_type: 'SystemNotice',
    user_id: '60001',
    payload: { title_key: `t${from + i}`, body_key: 'b' },
    created_at_ms: Date.now(),
  }));

const counts = async (e: TestEnv) =>
  Object.fromEntries(
    (
      await e.notice.query<any[]>(
        'SELECT CONCAT(channel, ":", status, ":", COALESCE(last_error_code, "")) AS k, COUNT(*) AS n FROM notice_delivery_events GROUP BY k',
      )
    )[0].map((r) => [r.k, Number(r.n)]),
  );

describe('per-user push cap (tencent_push.frequency_cap)', () => {
  it('50 notices in minutes, cap 3/h, three deliver processes: exactly 3 pushes, 47 held back, every inbox item and message; after Redis loses the window, still 3', async () => {
    env = await createTestEnv({
      tencent_push: {
        enabled: true,
        batch_linger: '0ms',
        kinds: ['activity_notice'],
        frequency_cap: [
          { max: 3, per: '1h' },
          { max: 10, per: '24h' },
        ],
      },
      inbox: { enabled: true },
      activity_notice_worker: { enabled: true, poll_interval: '50ms' },
    });
    await insertActivityRows(env.owner, env.config.activity_database, notices(1, 50));
    procs.push(
      await startPipeline(env.config, ['ingest', 'deliver']),
      await startPipeline(env.config, ['deliver']),
      await startPipeline(env.config, ['deliver']),
    );
    const first = await waitFor(
      () => counts(env!),
      (c) =>
        (c['tencent_push:delivered:'] ?? 0) + (c['tencent_push:suppressed:FREQUENCY_CAP'] ?? 0) === 50 &&
        c['inbox:delivered:'] === 50 &&
        c['tencent_im_c2c:delivered:'] === 50,
      20_000,
      'every row final',
    );
    expect(first).toMatchObject({ 'tencent_push:delivered:': 3, 'tencent_push:suppressed:FREQUENCY_CAP': 47 });
    expect(env.fakeIm.pushes().filter((p) => !p.duplicate && p.accounts.includes('60001'))).toHaveLength(3);

    // Redis loses the user's window (a partial loss): it is counted again from the ledger, so nothing more goes out.
    const lost = await env.redis.keys(`{${env.id}}:cap:*`);
    expect(lost.length).toBeGreaterThan(0);
    await env.redis.del(...lost);
    await insertActivityRows(env.owner, env.config.activity_database, notices(51, 10));
    const after = await waitFor(
      () => counts(env!),
      (c) => (c['tencent_push:delivered:'] ?? 0) + (c['tencent_push:suppressed:FREQUENCY_CAP'] ?? 0) === 60 && c['inbox:delivered:'] === 60,
      20_000,
      'the later rows final',
    );
    expect(after).toMatchObject({ 'tencent_push:delivered:': 3, 'tencent_push:suppressed:FREQUENCY_CAP': 57 });
    expect(env.fakeIm.pushes().filter((p) => !p.duplicate && p.accounts.includes('60001'))).toHaveLength(3);
  });
});
