import { createWorld, PIPELINE } from './world.ts';
import { insertActivityRows, type ActivityRow } from '../test/helpers/activity.ts';

export interface PushBatchResult {
  variant: string;
  notices: number;
  calls: number;
  accounts_per_call_median: number;
  /** From starting the deliver process (the backlog waiting) to the last push fake-im received. */
  drain_seconds: number;
  /** What the same notices cost one call each at the same pacing (calls / rate). */
  unbatched_seconds_at_rate: number;
}

/**
 * Issue 22's measurement: `notices` identical SystemNotice facts (one per user) through the tencent_push channel at
 * its shipped pacing (30 calls/s), with C2C taking none of them so only push is measured. `batchMaxAccounts: 1` is
 * the unbatched control.
 */
export async function runPushBatch(
  notices: number,
  batchMaxAccounts: number,
  imLatencyMs: number,
  /** Escalations: every push waits this long after its commit for its (unread) inbox item, so all fall due together. */
  escalateAfterMs?: number,
): Promise<PushBatchResult & { over_frequency_answers: number; drain_after_due_seconds?: number }> {
  const rate = 30;
  const world = await createWorld({
    ...PIPELINE,
    wallet_notice_worker: { enabled: false },
    activity_notice_worker: { enabled: true, poll_interval: '100ms', batch_size: 1000, lock_ttl: '30s', max_retry_count: 10, gap_grace: '60s' },
    tencent_im: { ...PIPELINE.tencent_im, kinds: ['wallet_notice', 'room_notice', 'vip_notice'] },
    tencent_push: {
      enabled: true,
      kinds: ['activity_notice'],
      rate_limit_per_second: rate,
      batch_max_accounts: batchMaxAccounts,
      ...(escalateAfterMs ? { escalate_after: { activity_notice: escalateAfterMs } } : {}),
    },
    ...(escalateAfterMs ? { inbox: { enabled: true, kinds: ['activity_notice'] } } : {}),
  });
  try {
    world.env.fakeIm.setPushFaults({ delay_ms: imLatencyMs, rate_limit_per_second: rate });
    const payload = { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body', params: { minutes: 30 } };
    // With escalation the processes run first and the facts carry their commit time, so they fall due together.
    const committedAt = Date.now();
    if (escalateAfterMs) {
      await world.spawn('ingest');
      await world.spawn('deliver');
    }
    for (let at = 0; at < notices; at += 1000) {
      const rows: ActivityRow[] = [];
      for (let i = at; i < Math.min(notices, at + 1000); i++)
        rows.push({ event_id: `push_${i}`, event_type: 'SystemNotice', user_id: String(300000 + i), payload, created_at_ms: committedAt });
      await insertActivityRows(world.env.owner, world.env.config.activity_database, rows);
    }
    if (!escalateAfterMs) await world.spawn('ingest');
    const startedAt = Date.now();
    if (!escalateAfterMs) await world.spawn('deliver');
    const deadline = Date.now() + 900_000;
    while (world.env.fakeIm.getPushStats().accounts < notices) {
      if (Date.now() > deadline) throw new Error(`push-batch: only ${world.env.fakeIm.getPushStats().accounts}/${notices} accounts pushed`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const pushes = world.env.fakeIm.pushes().filter((p) => !p.duplicate);
    const times = pushes.map((p) => p.receivedAtMs).sort((a, b) => a - b);
    const sizes = pushes.map((p) => p.accounts.length).sort((a, b) => a - b);
    return {
      variant: escalateAfterMs
        ? `escalations falling due together (escalate_after ${escalateAfterMs / 1000} s)`
        : batchMaxAccounts === 1
          ? 'one account per call'
          : `batched (up to ${batchMaxAccounts})`,
      notices,
      calls: pushes.length,
      accounts_per_call_median: sizes[Math.floor(sizes.length / 2)]!,
      drain_seconds: Math.round((times[times.length - 1]! - startedAt) / 100) / 10,
      unbatched_seconds_at_rate: Math.round((notices / rate) * 10) / 10,
      over_frequency_answers: Number((world.env.fakeIm.getPushStats() as { by_code?: Record<string, number> }).by_code?.['60007'] ?? 0),
      ...(escalateAfterMs ? { drain_after_due_seconds: Math.round((times[times.length - 1]! - (committedAt + escalateAfterMs)) / 100) / 10 } : {}),
    };
  } finally {
    await world.close();
  }
}
