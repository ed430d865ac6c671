import { afterEach, describe, expect, it } from 'vitest';
import { createTestEnv, waitFor, type TestEnv } from './helpers/env.ts';
import { balanceChanged, insertWalletRows, ledgerStatusCounts } from './helpers/outbox.ts';
import { startPipeline } from './helpers/pipeline.ts';
import type { NoticeProcess } from '../src/app/run-roles.ts';

let env: TestEnv;
let procs: NoticeProcess[] = [];

afterEach(async () => {
  for (const p of procs) await p.stop();
  procs = [];
  await env?.close();
});

describe('waiting for a send slot', () => {
  it('gives the claim back unspent when the wait would outlast the ledger lock, and still delivers each event once', async () => {
    // 5/s paces a slot every ~211 ms; 20 claims at once reserve slots ~4 s deep, past half the 3 s lock.
    env = await createTestEnv({ tencent_im: { rate_limit_per_second: 5 } });
    await insertWalletRows(env.owner, env.config.wallet_database, Array.from({ length: 20 }, (_, i) => balanceChanged(i + 1)));
    procs.push(await startPipeline(env.config));
    // Some claims are given back while their slot is still far off (the ledger shows why).
    const givenBack = async () => Number((await env.notice.query<any[]>("SELECT COUNT(*) AS n FROM notice_delivery_events WHERE last_error_code = 'SEND_SLOT_WAIT'"))[0][0].n);
    await waitFor(givenBack, (n) => n > 0, 10_000, 'a claim given back for SEND_SLOT_WAIT');

    await waitFor(() => ledgerStatusCounts(env.notice), (c) => c.delivered === 20, 40_000, '20 delivered');
    const messages = env.fakeIm.messages();
    expect(messages).toHaveLength(20);
    expect(new Set(messages.map((m) => JSON.parse(m.data).event_id)).size).toBe(20);
    const [rows] = await env.notice.query<any[]>('SELECT attempt_count, claim_count FROM notice_delivery_events');
    // No give-back spent an attempt or counted as an unfinished send.
    expect(rows.every((r) => r.attempt_count === 1 && r.claim_count === 1)).toBe(true);
    // Paced: no one-second span of arrivals holds more than the limit.
    const at = messages.map((m) => m.receivedAtMs).sort((a, b) => a - b);
    for (let i = 5; i < at.length; i++) expect(at[i]! - at[i - 5]!).toBeGreaterThanOrEqual(1000);
  });
});
