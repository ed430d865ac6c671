/**
 * One rate-limit drain (as the bench's phase 4), read closely: where in the drain the busy sliding seconds and
 * the gaps between arrivals fall, and the arrival rate per 5 s. Over-frequency answers show as ~1 s gaps (the
 * back-off). `npm run build && NOTICE_DIST=1 npx tsx bench/diagnose-rate-limit.ts`; EVENTS (20000),
 * MAX_QUEUED_JOBS (8192), INGEST_FIRST=1 (ingest the whole backlog before any deliver process starts).
 * BENCH_NODE_ARGS=--trace-gc adds GC lines to each process's output, which this prints when asked (SHOW_GC=1).
 */
import { createWorld, PIPELINE } from './world.ts';
import { preload } from './writer.ts';
import { RemoteFakeIm } from './remote-fake-im.ts';

const events = Number(process.env.EVENTS ?? 20_000);
const im = await RemoteFakeIm.reservePort();
const world = await createWorld({
  ...PIPELINE,
  wallet_notice_worker: { ...PIPELINE.wallet_notice_worker, max_queued_jobs: Number(process.env.MAX_QUEUED_JOBS ?? 8192) },
  tencent_im: { ...PIPELINE.tencent_im, rate_limit_per_second: 200, base_url: im.url },
});
const ledgerRows = async () => Number((await world.env.notice.query<any[]>('SELECT COUNT(*) AS n FROM notice_delivery_events'))[0][0].n);
try {
  await im.start(world.env.configFile);
  await im.setFaults({ delay_ms: 20, rate_limit_per_second: 200 });
  await preload(world.env.owner, world.env.config.wallet_database, events);
  if (process.env.INGEST_FIRST === '1') {
    await world.spawn('ingest');
    while ((await ledgerRows()) < events) await new Promise((r) => setTimeout(r, 200));
    for (let i = 0; i < 3; i++) await world.spawn('deliver');
  } else {
    for (let i = 0; i < 3; i++) await world.spawn('deliver');
    await world.spawn('ingest');
  }
  const startedAt = Date.now();
  let ingestedAfterMs = 0;
  while ((await im.stats()).delivered < events) {
    if (!ingestedAfterMs && (await ledgerRows()) >= events) ingestedAfterMs = Date.now() - startedAt;
    await new Promise((r) => setTimeout(r, 250));
  }
  const stats = await im.stats();
  const at = (await im.delivered()).map((m) => m.receivedAtMs).sort((a, b) => a - b);
  const first = at[0]!;
  const s = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
  console.log(
    `drain ${s(at[at.length - 1]! - first)}, ${(events / ((at[at.length - 1]! - first) / 1000)).toFixed(1)}/s; over-frequency answers ${stats.by_code['60007'] ?? 0}; whole backlog in the ledger ${ingestedAfterMs ? s(ingestedAfterMs) : 'before'} after the processes were up`,
  );
  const busy = new Set<string>();
  const gaps: Array<[number, number]> = [];
  let busiest = { count: 0, endsAtMs: 0 };
  for (let i = 0, j = 0; i < at.length; i++) {
    while (at[i]! - at[j]! >= 1000) j++;
    if (i - j + 1 > busiest.count) busiest = { count: i - j + 1, endsAtMs: at[i]! - first };
    if (i - j + 1 >= 196) busy.add(s(at[i]! - first));
    if (i > 0) gaps.push([at[i]! - at[i - 1]!, at[i - 1]! - first]);
  }
  console.log(
    `busiest sliding second: ${busiest.count} arrivals, ending at ${s(busiest.endsAtMs)}; those holding ≥ 196 end at: ${[...busy].join(' ') || 'none'}`,
  );
  console.log(
    `largest gaps between arrivals (ms @ drain time): ${gaps
      .sort((a, b) => b[0] - a[0])
      .slice(0, 12)
      .map(([g, t]) => `${g}@${s(t)}`)
      .join(' ')}`,
  );
  const per5s: number[] = [];
  for (const t of at) per5s[Math.floor((t - first) / 5000)] = (per5s[Math.floor((t - first) / 5000)] ?? 0) + 1;
  console.log(`arrivals per second, by 5 s: ${Array.from(per5s, (n) => Math.round((n ?? 0) / 5)).join(' ')}`);
  if (process.env.SHOW_GC === '1') {
    for (const { role, proc } of world.procs) {
      const pauses = [...proc.output().matchAll(/(\d+) ms: (Scavenge|Mark-Compact)[^,]*, ([\d.]+) \/ [\d.]+ ms/g)].map((m) => Number(m[3]));
      console.log(`${role}: ${pauses.length} GCs, ${pauses.reduce((a, b) => a + b, 0).toFixed(0)} ms, longest ${Math.max(0, ...pauses).toFixed(1)} ms`);
    }
  }
} finally {
  await world.close();
  await im.stop();
}
process.exit(0);
