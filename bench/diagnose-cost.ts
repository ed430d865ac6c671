/**
 * One role's cost per event in this process, on the compiled tree (tsx's keepNames helpers distort a profile): ingest
 * records EVENTS preloaded wallet facts, or deliver sends them (ingest runs first, unmeasured). Prints CPU µs per
 * event; PROFILE=cpu writes a CPU profile and prints its top frames, PROFILE=heap a sampled allocation profile
 * (garbage included) and the bytes per event by origin and function. fake-im runs in this process too: deliver's
 * CPU includes it, and its allocations show under src/fake-im. A/B two trees by running each in its own checkout.
 *
 *   npm run build && ROLE=ingest PROFILE=cpu npx tsx bench/diagnose-cost.ts
 *   npm run build && ROLE=deliver PROFILE=heap EVENTS=20000 npx tsx bench/diagnose-cost.ts
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createTestEnv } from '../test/helpers/env.ts';
import { preload } from './writer.ts';
import { PIPELINE } from './world.ts';
import { originOf, summarise } from './profile-summary.ts';

const role = process.env.ROLE === 'deliver' ? 'deliver' : 'ingest';
const events = Number(process.env.EVENTS ?? 20_000);
const profile = process.env.PROFILE;

const env = await createTestEnv(PIPELINE);
env.fakeIm.setFaults({ delay_ms: 20 });
// The compiled modules parse the config themselves: a config parsed by the source tree names no modules to them.
const fromDist = (path: string) => import(new URL(`../dist/${path}`, import.meta.url).href);
const { buildProcess } = await fromDist('cli/run-roles.js');
const { createLogger } = await fromDist('src/platform/logger.js');
const { loadConfigFile } = await fromDist('src/config/load.js');
const config = loadConfigFile(env.configFile);
const start = async (roles: string[]) => {
  const proc = await buildProcess(config, roles, createLogger(config.log.level));
  await proc.start();
  return proc;
};
const rowsIn = async (status: string | null) => {
  const [rows] = await env.notice.query<any[]>(`SELECT COUNT(*) AS n FROM notice_delivery_events${status ? ' WHERE status = ?' : ''}`, status ? [status] : []);
  return Number(rows[0].n);
};
const until = async (done: () => Promise<boolean>) => {
  while (!(await done())) await new Promise((r) => setTimeout(r, 20));
};

await preload(env.owner, env.config.wallet_database, events);
if (role === 'deliver') {
  const ingest = await start(['ingest']);
  await until(async () => (await rowsIn('pending')) >= events);
  await ingest.stop();
}
const session = new Session();
session.connect();
if (profile === 'cpu') {
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
} else if (profile === 'heap') {
  await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
}
const cpuAtStart = process.cpuUsage();
const startedAt = performance.now();
const proc = await start([role]);
await until(async () => (await rowsIn(role === 'ingest' ? null : 'delivered')) >= events);
const cpu = process.cpuUsage(cpuAtStart);
const ms = performance.now() - startedAt;
console.log(
  JSON.stringify({ role, events, cpu_us_per_event: Math.round(((cpu.user + cpu.system) / events) * 10) / 10, events_per_s: Math.round((events / ms) * 1000) }),
);
if (profile === 'cpu') {
  const { profile: p } = await session.post('Profiler.stop');
  writeFileSync(`.tmp/${role}.cpuprofile`, JSON.stringify(p));
  const s = summarise(p as any);
  const share = (v: number) => `${((v / s.totalMs) * 100).toFixed(1)} %`;
  console.log(
    `by origin: ${s.byOrigin
      .slice(0, 12)
      .map(([k, v]) => `${k} ${share(v)}`)
      .join(', ')}`,
  );
  for (const [k, v] of s.byFunction.slice(0, 25)) console.log(`  ${share(v).padStart(7)}  ${k}`);
} else if (profile === 'heap') {
  const { profile: p } = await session.post('HeapProfiler.stopSampling');
  writeFileSync(`.tmp/${role}.heapprofile`, JSON.stringify(p));
  const byOrigin = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  const walk = (node: any) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const bytes = node.selfSize as number;
    total += bytes;
    byOrigin.set(originOf(url), (byOrigin.get(originOf(url)) ?? 0) + bytes);
    const name = `${functionName || '(anonymous)'} ${originOf(url)}:${lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + bytes);
    for (const child of node.children ?? []) walk(child);
  };
  walk(p.head);
  const kb = (bytes: number) => `${(bytes / events / 1024).toFixed(2)} KB`;
  console.log(`allocated per event: ${kb(total)}`);
  console.log(
    `by origin: ${[...byOrigin]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([k, v]) => `${k} ${kb(v)}`)
      .join(', ')}`,
  );
  for (const [k, v] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${kb(v).padStart(9)}  ${k}`);
}
await proc.stop();
await env.close();
process.exit(0);
