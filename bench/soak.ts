import { createWorld, PIPELINE, type World } from './world.ts';
import { percentile, rssMb } from './proc-stats.ts';
import { balanceChanged, insertWalletRows } from '../test/helpers/outbox.ts';
import { insertActivityRows } from '../test/helpers/activity.ts';

export interface SoakSample {
  minute: number;
  redis_used_mb: number;
  rss_mb: Record<string, number>;
  /** Commit → fake-im receipt of the C2C messages committed in this sample's window. */
  p99_ms: number;
}

export interface SoakResult {
  minutes: number;
  facts_per_second: number;
  samples: SoakSample[];
  /** Redis memory at the end over memory at minute 3 (issue 37: ≤ 1.2). */
  redis_growth_after_warmup: number;
  /** Completed and failed jobs kept in Redis at the end, over every queue. */
  kept_jobs: number;
  /** MEMORY USAGE of kept job hashes (average over up to 20 per queue and set), bytes. */
  bytes_per_kept_job: number | null;
  lost: number;
}

/**
 * Issue 37's memory soak: ~80 facts/s for `minutes` (60 wallet balance facts → C2C; 20 activity facts → C2C, inbox
 * and push), one ingest and two deliver processes. Samples Redis memory (the private server holds only this prefix),
 * each process's RSS and the C2C p99 every 30 s.
 */
export async function runSoak(minutes: number, bin?: string, log: (text: string) => void = () => undefined): Promise<SoakResult> {
  const world = await createWorld(
    {
      ...PIPELINE,
      activity_notice_worker: { enabled: true, poll_interval: '100ms', batch_size: 500, lock_ttl: '30s', max_retry_count: 10, gap_grace: '60s' },
      inbox: { enabled: true, kinds: ['activity_notice'] },
      tencent_push: { enabled: true, kinds: ['activity_notice'], rate_limit_per_second: 30 },
    },
    { bin },
  );
  const { Redis } = await import('ioredis');
  const redis = new Redis(world.env.config.redis.url);
  try {
    world.env.fakeIm.setFaults({ delay_ms: 20 });
    world.env.fakeIm.setPushFaults({ delay_ms: 20 });
    await world.spawn('ingest');
    await world.spawn('deliver');
    await world.spawn('deliver');
    const committedAt = new Map<string, number>();
    const started = Date.now();
    const until = started + minutes * 60_000;
    let wallet = 0;
    let activity = 0;
    const samples: SoakSample[] = [];
    let nextSample = started + 30_000;
    const payload = { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body', params: { minutes: 30 } };
    while (Date.now() < until) {
      const tickAt = Date.now();
      const walletRows = Array.from({ length: 15 }, () => balanceChanged(++wallet));
      await insertWalletRows(world.env.owner, world.env.config.wallet_database, walletRows);
      for (const r of walletRows) committedAt.set(r.event_id!, Date.now());
      await insertActivityRows(
        world.env.owner,
        world.env.config.activity_database,
        Array.from({ length: 5 }, () => ({
          event_id: `soak_${++activity}`,
          event_type: 'SystemNotice',
          user_id: String(700000 + activity),
          payload,
          created_at_ms: Date.now(),
        })),
      );
      if (Date.now() >= nextSample) {
        samples.push(await sample(world, redis, started, committedAt, nextSample - 30_000));
        log(`soak minute ${samples.at(-1)!.minute}: Redis ${samples.at(-1)!.redis_used_mb} MB, p99 ${samples.at(-1)!.p99_ms} ms`);
        nextSample += 30_000;
      }
      const wait = tickAt + 250 - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    // Drained: every wallet message arrived.
    const deadline = Date.now() + 60_000;
    const delivered = () => new Set(world.env.fakeIm.delivered().map((m) => (JSON.parse(m.data) as { event_id: string }).event_id));
    let got = delivered();
    while ([...committedAt.keys()].some((id) => !got.has(id)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 500));
      got = delivered();
    }
    const atThree = samples.find((s) => s.minute >= 3) ?? samples[0]!;
    const kept = await keptJobs(redis, world.env.config.redis.prefix);
    return {
      minutes,
      facts_per_second: 80,
      samples,
      redis_growth_after_warmup: Math.round((samples.at(-1)!.redis_used_mb / atThree.redis_used_mb) * 100) / 100,
      kept_jobs: kept.count,
      bytes_per_kept_job: kept.bytes,
      lost: [...committedAt.keys()].filter((id) => !got.has(id)).length,
    };
  } finally {
    redis.disconnect();
    await world.close();
  }
}

async function sample(world: World, redis: InstanceType<typeof import('ioredis').Redis>, started: number, committedAt: Map<string, number>, fromMs: number) {
  const info = await redis.info('memory');
  const received = new Map(world.env.fakeIm.delivered().map((m) => [(JSON.parse(m.data) as { event_id: string }).event_id, m.receivedAtMs]));
  const latencies: number[] = [];
  for (const [id, at] of committedAt) {
    if (at < fromMs) continue;
    const got = received.get(id);
    if (got !== undefined) latencies.push(got - at);
  }
  latencies.sort((a, b) => a - b);
  return {
    minute: Math.round(((Date.now() - started) / 60_000) * 10) / 10,
    redis_used_mb: Math.round((Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0) / 1024 / 1024) * 10) / 10,
    rss_mb: Object.fromEntries(world.procs.map(({ role, proc }, i) => [`${role}#${i}`, Math.round(rssMb(proc.child.pid!))])),
    p99_ms: percentile(latencies, 99),
  };
}

type RedisClient = InstanceType<typeof import('ioredis').Redis>;

async function queues(redis: RedisClient, prefix: string): Promise<string[]> {
  const names = new Set<string>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:deliver-*:meta`, 'COUNT', 1000);
    cursor = next;
    for (const k of keys) names.add(k.slice(0, -':meta'.length));
  } while (cursor !== '0');
  return [...names];
}

async function keptJobs(redis: RedisClient, prefix: string): Promise<{ count: number; bytes: number | null }> {
  let count = 0;
  const sizes: number[] = [];
  for (const q of await queues(redis, prefix)) {
    for (const set of ['completed', 'failed']) {
      count += await redis.zcard(`${q}:${set}`);
      for (const id of await redis.zrange(`${q}:${set}`, 0, 19)) {
        const bytes = await redis.memory('USAGE', `${q}:${id}`);
        if (typeof bytes === 'number') sizes.push(bytes);
      }
    }
  }
  return { count, bytes: sizes.length ? Math.round(sizes.reduce((a, b) => a + b, 0) / sizes.length) : null };
}
