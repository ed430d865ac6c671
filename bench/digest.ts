import { createWorld, PIPELINE } from './world.ts';
import { insertActivityRows, type ActivityRow } from '../test/helpers/activity.ts';
import { percentile } from './proc-stats.ts';

export interface DigestBenchResult {
  facts: number;
  users: number;
  window_s: number;
  phones_notified: number;
  fewer_than_facts_percent: number;
  push_calls: number;
  /** From a user's first fact's commit to their summary reaching fake-im, ms. */
  summary_after_first_fact_p50_ms: number;
  summary_after_first_fact_p99_ms: number;
  summary_after_first_fact_max_ms: number;
}

/**
 * Issue 35's digest measurement: `facts` reward notices to `users` users committed evenly over `seconds` (user =
 * fact mod users, so each user's facts spread over the burst), a digest window of `windowMs` on activity_notice.
 * Pushes only (C2C takes no activity notice here), at the shipped push pacing.
 */
export async function runDigestBench(facts: number, users: number, seconds: number, windowMs: number): Promise<DigestBenchResult> {
  const world = await createWorld({
    ...PIPELINE,
    wallet_notice_worker: { enabled: false },
    activity_notice_worker: { enabled: true, poll_interval: '100ms', batch_size: 1000, lock_ttl: '30s', max_retry_count: 10, gap_grace: '60s' },
    tencent_im: { ...PIPELINE.tencent_im, kinds: ['wallet_notice', 'room_notice', 'vip_notice'] },
    tencent_push: { enabled: true, kinds: ['activity_notice'], digest: { activity_notice: { window: windowMs } } },
  });
  try {
    await world.spawn('ingest');
    await world.spawn('deliver');
    const firstAt = new Map<string, number>();
    const started = Date.now();
    const perTick = Math.max(1, Math.round(facts / (seconds * 10)));
    for (let i = 0; i < facts; ) {
      const rows: ActivityRow[] = [];
      for (let k = 0; k < perTick && i < facts; k++, i++) {
        const user = String(400000 + (i % users));
        if (!firstAt.has(user)) firstAt.set(user, Date.now());
        rows.push({
          event_id: `digest_${i}`,
          event_type: 'ActivityRewardGranted',
          user_id: user,
          payload: { activity_id: 'act_spring', grant_id: `g${i}`, reward_items: [{ resource_id: 101, count: 1 }] },
          created_at_ms: Date.now(),
        });
      }
      await insertActivityRows(world.env.owner, world.env.config.activity_database, rows);
      const due = started + (i / facts) * seconds * 1000;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
    }
    const deadline = Date.now() + windowMs + 120_000;
    const carried = () =>
      world.env.fakeIm
        .pushes()
        .filter((p) => !p.duplicate)
        .reduce((n, p) => n + p.accounts.length * Number((JSON.parse(String(p.offlinePush.Ext ?? '{}')) as { digest_count?: number }).digest_count ?? 1), 0);
    while (carried() < facts) {
      if (Date.now() > deadline) throw new Error(`digest: summaries carry ${carried()}/${facts} facts`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const pushes = world.env.fakeIm.pushes().filter((p) => !p.duplicate);
    const lastOf = new Map<string, number>();
    for (const p of pushes) for (const u of p.accounts) lastOf.set(u, Math.max(lastOf.get(u) ?? 0, p.receivedAtMs));
    const after = [...lastOf].map(([u, at]) => at - firstAt.get(u)!).sort((a, b) => a - b);
    const notified = pushes.reduce((n, p) => n + p.accounts.length, 0);
    return {
      facts,
      users,
      window_s: windowMs / 1000,
      phones_notified: notified,
      fewer_than_facts_percent: Math.round((1 - notified / facts) * 1000) / 10,
      push_calls: pushes.length,
      summary_after_first_fact_p50_ms: percentile(after, 50),
      summary_after_first_fact_p99_ms: percentile(after, 99),
      summary_after_first_fact_max_ms: after[after.length - 1]!,
    };
  } finally {
    await world.close();
  }
}
