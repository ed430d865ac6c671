/**
 * One latency run (as the bench's phase 3), taken apart: how much of commit → fake-im is the poll's wait (commit →
 * the ledger row) and how much the pipeline after it (ledger row → request), per poll burst the first and last
 * arrival, and a few bursts' arrival offsets in commit order (out-of-order sends show as jumps).
 * `npm run build && NOTICE_DIST=1 npx tsx bench/diagnose-latency.ts`; POLL (500ms), RATE (150), SECONDS (20),
 * LIMIT (0: the rate limit off; 200 as in production), CONCURRENCY (64), DELIVERS (1: deliver processes).
 */
import type { RowDataPacket } from 'mysql2/promise';
import { createWorld, PIPELINE } from './world.ts';
import { steadyStream } from './writer.ts';
import { median, percentile } from './proc-stats.ts';

const poll = process.env.POLL ?? '500ms';
const rate = Number(process.env.RATE ?? 150);
const seconds = Number(process.env.SECONDS ?? 20);
const summary = (values: number[]) => {
  const a = [...values].sort((x, y) => x - y);
  return `p50 ${percentile(a, 50)}  p95 ${percentile(a, 95)}  p99 ${percentile(a, 99)}  max ${a[a.length - 1]}`;
};

const world = await createWorld({
  ...PIPELINE,
  wallet_notice_worker: { ...PIPELINE.wallet_notice_worker, poll_interval: poll, batch_size: 100 },
  deliver: { ...PIPELINE.deliver, concurrency: Number(process.env.CONCURRENCY ?? PIPELINE.deliver.concurrency) },
  tencent_im: { ...PIPELINE.tencent_im, rate_limit_per_second: Number(process.env.LIMIT ?? 0) },
});
try {
  world.env.fakeIm.setFaults({ delay_ms: 20 });
  await world.spawn('ingest');
  for (let i = 0; i < Number(process.env.DELIVERS ?? 1); i++) await world.spawn('deliver');
  await new Promise((r) => setTimeout(r, 3000));
  const committedAt = await steadyStream(world.env.owner, world.env.config.wallet_database, rate, seconds);
  while (world.env.fakeIm.delivered().length < committedAt.size) await new Promise((r) => setTimeout(r, 100));
  const [rows] = await world.env.notice.query<RowDataPacket[]>('SELECT source_event_id, created_at_ms FROM notice_delivery_events');
  const recordedAt = new Map(rows.map((r) => [String(r.source_event_id), Number(r.created_at_ms)]));
  const sends = world.env.fakeIm.delivered().map((m) => {
    const id = String(JSON.parse(m.data).event_id);
    return { committed: committedAt.get(id)!, recorded: recordedAt.get(id)!, received: m.receivedAtMs };
  });
  console.log(`commit → request       ${summary(sends.map((x) => x.received - x.committed))}`);
  console.log(`commit → ledger row    ${summary(sends.map((x) => x.recorded - x.committed))}   (the poll's wait)`);
  console.log(`ledger row → request   ${summary(sends.map((x) => x.received - x.recorded))}`);
  // One poll's rows share their ledger created_at_ms.
  const bursts = new Map<number, typeof sends>();
  for (const x of sends) (bursts.get(x.recorded) ?? bursts.set(x.recorded, []).get(x.recorded)!).push(x);
  const offsets = [...bursts.values()].map((b) => b.map((x) => x.received - x.recorded));
  console.log(
    `${bursts.size} bursts, median size ${median(offsets.map((o) => o.length))}; first arrival ${summary(offsets.map((o) => Math.min(...o)))}; last arrival ${summary(offsets.map((o) => Math.max(...o)))}`,
  );
  const worst = [...sends].sort((a, b) => b.received - b.committed - (a.received - a.committed)).slice(0, Math.max(1, Math.ceil(sends.length / 100)));
  console.log(
    `slowest 1 %: mean poll wait ${Math.round(worst.reduce((s, x) => s + x.recorded - x.committed, 0) / worst.length)} ms, mean ledger row → request ${Math.round(worst.reduce((s, x) => s + x.received - x.recorded, 0) / worst.length)} ms`,
  );
  console.log('arrival offsets (ms after the ledger row) of three bursts, in commit order:');
  for (const burst of [...bursts.values()].slice(10, 13))
    console.log(
      '  ' +
        [...burst]
          .sort((a, b) => a.committed - b.committed)
          .map((x) => x.received - x.recorded)
          .join(' '),
    );
} finally {
  await world.close();
}
process.exit(0);
