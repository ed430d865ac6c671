/**
 * Summarises V8 CPU profiles (`BENCH_PROFILE=1 npm run bench` writes one per process into .tmp/prof): self time by
 * function and by package, so a closing note can name what dominates without opening DevTools.
 *
 *   npx tsx bench/profile-summary.ts .tmp/prof/CPU.*.cpuprofile [--top 25]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code comes from: a package under node_modules, node's own, or this project's file. */
export function originOf(url: string): string {
  if (url === '') return '(native / vm)';
  if (url.startsWith('node:')) return 'node:';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const ours = /\/(src|deliver|ingest|queues|cli|dashboard)\/(.+)$/.exec(url);
  return ours ? `${ours[1]}/${ours[2]}` : url;
}

export function summarise(profile: Profile): { totalMs: number; byFunction: Array<[string, number]>; byOrigin: Array<[string, number]> } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const fn = new Map<string, number>();
  const origin = new Map<string, number>();
  let total = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)' || functionName === '(program)') continue;
    total += us;
    const where = originOf(url);
    const name = `${functionName || '(anonymous)'} ${where}${url ? `:${lineNumber + 1}` : ''}`;
    fn.set(name, (fn.get(name) ?? 0) + us);
    const bucket =
      functionName === '(garbage collector)'
        ? '(garbage collector)'
        : where.includes('/') && !where.startsWith('@') && !where.startsWith('(')
          ? where.split('/')[0]!
          : where;
    origin.set(bucket, (origin.get(bucket) ?? 0) + us);
  }
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).map(([k, us]) => [k, us / 1000] as [string, number]);
  return { totalMs: total / 1000, byFunction: sorted(fn), byOrigin: sorted(origin) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt >= 0 ? Number(args[topAt + 1]) : 25;
  const files = args.filter((a, i) => !a.startsWith('--') && i !== topAt + 1);
  for (const file of files) {
    const s = summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile);
    const pct = (ms: number) => `${((ms / s.totalMs) * 100).toFixed(1)} %`;
    console.log(`\n${file}: ${Math.round(s.totalMs)} ms on CPU (idle excluded)`);
    console.log('by origin:');
    for (const [k, ms] of s.byOrigin.slice(0, 15)) console.log(`  ${pct(ms).padStart(7)}  ${k}`);
    console.log(`top ${top} functions by self time:`);
    for (const [k, ms] of s.byFunction.slice(0, top)) console.log(`  ${pct(ms).padStart(7)}  ${k}`);
  }
}
