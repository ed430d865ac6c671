import { spawn } from 'node:child_process';
import { createWorld, PIPELINE } from './world.ts';
import { steadyStream } from './writer.ts';
import { percentile } from './proc-stats.ts';
import { freePort } from '../test/helpers/ports.ts';
import { factHash } from '../src/channels/inbox/store.ts';

export interface FloodResult {
  rate: number;
  seconds: number;
  quiet: { p50_ms: number; p99_ms: number; events: number };
  flood: { p50_ms: number; p99_ms: number; events: number };
  p99_ratio: number;
  api_calls: Record<string, number>;
}

/**
 * Issue 30's bulkhead: wallet notices (commit → fake-im) at `rate`/s for `seconds`, once quiet and once while a
 * client floods the inbox API (4 MiB DeleteNotifications loops and `concurrent` small calls in flight), in one world.
 * Ingest, deliver and the inbox-api role are separate processes, as docs/security.md deploys them.
 */
export async function runApiFlood(rate: number, seconds: number, concurrent: number, imLatencyMs: number, log: (t: string) => void): Promise<FloodResult> {
  const apiPort = await freePort();
  const users = 1000;
  const world = await createWorld({ ...PIPELINE, inbox: { enabled: true, api_port: apiPort } });
  try {
    world.env.fakeIm.setFaults({ delay_ms: imLatencyMs });
    // 50 items per user, so each small call reads real rows.
    const rows = [];
    for (let u = 0; u < users; u++)
      for (let i = 0; i < 50; i++) {
        const fact = { sourceName: 'bench', appCode: 'lalu', sourceEventId: `f${u}_${i}` };
        rows.push([
          factHash(fact),
          'lalu',
          String(100000 + u),
          'bench',
          fact.sourceEventId,
          'activity_notice',
          'SystemNotice',
          `{"n":${i}}`,
          1800000000000 + i,
          null,
        ]);
      }
    for (let at = 0; at < rows.length; at += 5000) {
      await world.env.notice.query(
        'INSERT INTO notice_inbox_items (fact_hash, app_code, user_id, source_name, source_event_id, notice_kind, event_type, payload, created_at_ms, expire_at_ms) VALUES ?',
        [rows.slice(at, at + 5000)],
      );
    }
    await world.spawn('ingest');
    await world.spawn('deliver');
    await world.spawn('inbox-api');
    const latencies = async (offset: number) => {
      const committedAt = await steadyStream(world.env.owner, world.env.config.wallet_database, rate, seconds, 4, offset);
      const deadline = Date.now() + 60_000;
      const mine = () => world.env.fakeIm.delivered().filter((m) => committedAt.has(JSON.parse(m.data).event_id));
      while (mine().length < committedAt.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const ms = mine()
        .map((m) => m.receivedAtMs - committedAt.get(JSON.parse(m.data).event_id)!)
        .sort((a, b) => a - b);
      return { p50_ms: percentile(ms, 50), p99_ms: percentile(ms, 99), events: ms.length };
    };
    log(`api_flood: ${rate}/s wallet notices for ${seconds} s, quiet`);
    const quiet = await latencies(0);
    log(`api_flood: the same while the inbox API is flooded (3 × 4 MiB deletes, ${concurrent} calls in flight)`);
    const flooder = spawn(
      process.execPath,
      ['--import', 'tsx', 'bench/api-flood-client.ts', String(apiPort), String(seconds + 5), String(concurrent), '3', String(users)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    flooder.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((resolve) => flooder.on('exit', () => resolve()));
    await new Promise((r) => setTimeout(r, 3000)); // the flood is at full strength before the notices start
    const flood = await latencies(10_000_000);
    await exited;
    return {
      rate,
      seconds,
      quiet,
      flood,
      p99_ratio: Math.round((flood.p99_ms / Math.max(1, quiet.p99_ms)) * 100) / 100,
      api_calls: JSON.parse(out.trim().split('\n').pop() || '{}'),
    };
  } finally {
    await world.close();
  }
}
