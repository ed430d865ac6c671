import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import {
  PACE_DECREASE,
  PACE_FLOOR,
  PACE_HOLD_MS,
  PACE_RECOVERY_PER_S,
  NO_LIMIT_RECHECK_MS,
  PACE_SHARE,
  SendPacer,
  WARM_UP_MS,
  WARM_UP_SPACING,
} from '../src/tencent-im/send-pacer.ts';
import { REDIS_URL } from './helpers/env.ts';

/** The shared send clock, against the real Redis: slots are what makes "no sliding second above the limit" hold. */
describe('send pacer', () => {
  const connections: Redis[] = [];
  const connect = () => {
    const redis = new Redis(REDIS_URL);
    connections.push(redis);
    return redis;
  };
  const prefix = () => `{pacer${randomBytes(4).toString('hex')}}`;
  afterAll(() => connections.forEach((c) => c.disconnect()));

  it('hands out slots one interval apart across processes, so no sliding second holds more than the rate', async () => {
    const shared = prefix();
    // Three "processes" (own connections) reserving concurrently, as three deliver processes at concurrency 64 do.
    const pacers = [0, 1, 2].map(() => new SendPacer(connect(), shared, 200));
    const slots = (await Promise.all(Array.from({ length: 600 }, (_, i) => pacers[i % 3]!.reserve()))).map((r) => r.slotUs).sort((a, b) => a - b);
    const interval = pacers[0]!.intervalUs;
    expect(interval).toBe(Math.ceil(1_000_000 / (200 * PACE_SHARE)));
    for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBeGreaterThanOrEqual(interval);
    let busiest = 0;
    for (let i = 0, j = 0; i < slots.length; i++) {
      while (slots[i]! - slots[j]! >= 1_000_000) j++;
      busiest = Math.max(busiest, i - j + 1);
    }
    // 600 sends at PACE_SHARE of 200/s span about three seconds; the fullest second of slots holds at most the cap, which leaves
    // the rest of the limit for the spread between a grant and the request's arrival.
    expect(busiest).toBe(Math.floor(1_000_000 / interval) + 1);
    expect(busiest).toBeLessThanOrEqual(Math.floor(200 * PACE_SHARE));
  });

  it('after a second with no sends, warms up: the first WARM_UP_MS of slots spaced WARM_UP_SPACING× wider, then the full pace', async () => {
    const shared = prefix();
    const pacer = new SendPacer(connect(), shared, 200);
    const interval = pacer.intervalUs;
    expect(pacer.warmUpIntervalUs).toBe(Math.ceil(interval * WARM_UP_SPACING));
    expect(pacer.warmUpIntervalUs).toBeGreaterThan(interval);
    // All asked for at once (one pipelined burst on one connection). Redis's clock moves between two of them, and on a
    // starved machine Redis itself can be held up past a slot: a reservation that arrives after the slot ahead of it
    // has come gets "now", a wider gap. So: no gap is ever narrower than its phase's spacing, and every reservation
    // that was queued (its slot still ahead when Redis gave it) is exactly one spacing after the one before.
    const reserved = await Promise.all(Array.from({ length: 300 }, () => pacer.reserve()));
    const start = reserved[0]!.slotUs;
    const gaps = reserved.slice(1).map((r, i) => ({
      from: reserved[i]!.slotUs - start,
      gap: r.slotUs - reserved[i]!.slotUs,
      queued: r.waitMs > 0,
    }));
    const warm = gaps.filter((g) => g.from < WARM_UP_MS * 1000);
    const full = gaps.filter((g) => g.from >= WARM_UP_MS * 1000);
    expect(warm.every((g) => g.gap >= pacer.warmUpIntervalUs)).toBe(true);
    expect(full.every((g) => g.gap >= interval)).toBe(true);
    expect(warm.filter((g) => g.queued).every((g) => g.gap === pacer.warmUpIntervalUs)).toBe(true);
    expect(full.filter((g) => g.queued).every((g) => g.gap === interval)).toBe(true);
    expect(warm.filter((g) => g.queued).length).toBeGreaterThan(5);
    expect(full.filter((g) => g.queued).length).toBeGreaterThan(50);
    // Sends that keep coming do not warm up again: the burst goes on at the full pace.
    const [later, after] = await Promise.all([pacer.reserve(), pacer.reserve()]);
    expect(after.slotUs - later.slotUs).toBe(interval);
  });

  it('a back-off makes every process wait, including sends that reserved a slot before it began', async () => {
    // (they are refused admission during the pause and take a new slot behind it)
    const shared = prefix();
    // a and b share a connection so b's reservation reaches Redis before a's back-off; other is another process.
    const connection = connect();
    const a = new SendPacer(connection, shared, 50);
    const b = new SendPacer(connection, shared, 50);
    const other = new SendPacer(connect(), shared, 50);
    const first = await a.reserve();
    expect(first.waitMs).toBeLessThan(1);
    // A send waiting for a slot 20 ms away sees the back-off taken meanwhile and queues up behind it.
    await a.reserve();
    const started = Date.now();
    const waiting = b.acquire().then(() => Date.now() - started);
    await a.backOff(400);
    const waited = await waiting;
    expect(waited).toBeGreaterThanOrEqual(390);
    const after = await other.reserve();
    expect(after.slotUs).toBeGreaterThanOrEqual(first.slotUs + 400_000);
  });

  it('admits at most cap sends per sliding second, whichever process asks and however late', async () => {
    const shared = prefix();
    const pacers = [0, 1, 2].map(() => new SendPacer(connect(), shared, 10));
    expect(pacers[0]!.cap).toBe(9);
    // Late processes asking all at once: the sliding second takes exactly cap of them.
    const admitted = await Promise.all(Array.from({ length: 30 }, (_, i) => pacers[i % 3]!.admit()));
    expect(admitted.filter(Boolean)).toHaveLength(9);
  });

  it('a send that reaches its slot late (a blocked event loop) still goes if the last second has room', async () => {
    const shared = prefix();
    let refused = 0;
    const pacer = new SendPacer(connect(), shared, 10, () => refused++);
    await pacer.reserve(); // the next slot is ~160 ms away (a warm-up spaces slots 1.5× as far)
    const acquired = pacer.acquire();
    await new Promise((r) => setTimeout(r, 20));
    const blockedUntil = Date.now() + 300;
    while (Date.now() < blockedUntil); // the process is busy past the slot
    await acquired;
    expect(refused).toBe(0);
  });

  it('with no rate limit nothing waits and nothing is written, but a back-off still holds every process', async () => {
    const shared = prefix();
    const redis = connect();
    const pacer = new SendPacer(redis, shared, 0);
    for (let i = 0; i < 50; i++) expect((await pacer.reserve()).waitMs).toBeLessThan(1);
    expect(await redis.keys(`${shared}*`)).toEqual([]);
    await new SendPacer(connect(), shared, 0).backOff(300);
    const { waitMs } = await pacer.reserve();
    expect(waitMs).toBeGreaterThan(250);
    expect(waitMs).toBeLessThanOrEqual(300);
  });
  it("with no rate limit one look at the back-off serves a burst of sends, and another process's back-off holds the next ones", async () => {
    const shared = prefix();
    const pacer = new SendPacer(connect(), shared, 0);
    let looks = 0;
    const reserve = pacer.reserve.bind(pacer);
    pacer.reserve = (...args) => {
      looks++;
      return reserve(...args);
    };
    const burst = await Promise.all(Array.from({ length: 200 }, () => pacer.acquire()));
    expect(burst.every((r) => r.sent)).toBe(true);
    expect(looks).toBe(1);
    await new SendPacer(connect(), shared, 0).backOff(300);
    await new Promise((r) => setTimeout(r, NO_LIMIT_RECHECK_MS + 1));
    const startedAt = performance.now();
    await pacer.acquire();
    expect(performance.now() - startedAt).toBeGreaterThan(250);
    expect(looks).toBe(2);
  });
  it('a sender that cannot wait for the next free slot takes none, and hears when to come back', async () => {
    const shared = prefix();
    const pacer = new SendPacer(connect(), shared, 10); // one slot every ~106 ms
    for (let i = 0; i < 5; i++) await pacer.reserve(); // slots ~530 ms deep
    const before = await pacer.reserve(0); // a look at the next free slot, not taken
    expect(before.taken).toBe(false);
    const outcome = await pacer.acquire(100);
    expect(outcome.sent).toBe(false);
    if (!outcome.sent) expect(outcome.retryInMs).toBeGreaterThan(300);
    // Neither look moved the queue: the next taken slot is the one that was free before.
    const next = await pacer.reserve();
    expect(next.taken).toBe(true);
    expect(next.slotUs).toBe(before.slotUs);
  });

  it("gives each due slot to this process's oldest waiting send, whatever the order they reserved in", async () => {
    const shared = prefix();
    const redis = connect();
    const pacer = new SendPacer(redis, shared, 50); // one slot every ~21 ms
    for (let i = 0; i < 5; i++) await new SendPacer(connect(), shared, 50).reserve(); // another process holds the next ~100 ms
    const order: number[] = [];
    // Younger events reserve first (as a lane whose claim returned first would); the oldest should still go first.
    const sends = [30, 20, 10].map((age) => pacer.acquire(Infinity, age).then(() => order.push(age)));
    await Promise.all(sends);
    expect(order).toEqual([10, 20, 30]);
    // Each slot went to one send: exactly three admitted. (Their admission times are not compared: two slots that came
    // due while this process waited for the CPU are admitted together, 109 µs apart once in CI; the slots' own spacing
    // is the first test's.)
    const log = await redis.zrange(`${shared}:tencent-im:send-pacer:sent`, 0, -1);
    expect(log).toHaveLength(3);
  });

  it('across processes too: a younger send waits while another process has an older one waiting for a slot', async () => {
    const shared = prefix();
    const filler = new SendPacer(connect(), shared, 50);
    for (let i = 0; i < 5; i++) await filler.reserve(); // the queue of slots is ~150 ms deep
    const a = new SendPacer(connect(), shared, 50);
    const b = new SendPacer(connect(), shared, 50);
    const order: string[] = [];
    const young = a.acquire(Infinity, 30).then(() => order.push('a:30'));
    await new Promise((r) => setTimeout(r, 10));
    const old = b.acquire(Infinity, 10).then(() => order.push('b:10'));
    await Promise.all([young, old]);
    expect(order).toEqual(['b:10', 'a:30']);
  });

  it('a process that died while waiting for a slot holds the others back only until its registration expires', async () => {
    const shared = prefix();
    const filler = new SendPacer(connect(), shared, 50);
    for (let i = 0; i < 5; i++) await filler.reserve();
    // The dead process asked once as the oldest waiting send (age 1), was told the queue was too deep, and vanished.
    const dead = await new SendPacer(connect(), shared, 50).reserve(0, { age: 1 });
    expect(dead.taken).toBe(false);
    const started = performance.now();
    expect(await new SendPacer(connect(), shared, 50).acquire(Infinity, 100)).toEqual({ sent: true });
    // Held back past the queue (~150 ms) by the dead registration's expiry (its next ask + 250 ms), then sent.
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThan(300);
    expect(waited).toBeLessThan(2000);
  });

  it('an over-frequency answer lowers the pace of every process a little, once per burst of answers, never below the floor', async () => {
    const shared = prefix();
    const a = new SendPacer(connect(), shared, 200);
    const b = new SendPacer(connect(), shared, 200);
    // Past the warm-up, slots are one interval apart.
    for (let i = 0; i < 150; i++) await a.reserve();
    const before = [await a.reserve(), await a.reserve()];
    expect(before[1]!.slotUs - before[0]!.slotUs).toBe(a.intervalUs);
    // Several answers from one bunch count once.
    const loweredAt = Date.now();
    const paces = await Promise.all([a.overFrequency(), b.overFrequency(), b.overFrequency()]);
    expect(paces.every((p) => Math.abs(p - PACE_DECREASE) < 0.002)).toBe(true);
    // The pace grows back PACE_RECOVERY_PER_S of the full rate per second: bounds follow the time this machine took.
    const paceBy = () => Math.min(1, PACE_DECREASE + (PACE_RECOVERY_PER_S * (Date.now() - loweredAt)) / 1000 + 0.002);
    // The other process's slots are spaced by the lowered pace.
    const after = [await b.reserve(), await b.reserve()];
    const spacing = after[1]!.slotUs - after[0]!.slotUs;
    expect(spacing).toBeGreaterThanOrEqual(Math.floor(a.intervalUs / paceBy()));
    expect(spacing).toBeLessThanOrEqual(Math.ceil(a.intervalUs / PACE_DECREASE));
    // And the sliding second admits fewer: cap × pace.
    const admitted = (await Promise.all(Array.from({ length: a.cap }, () => a.admit()))).filter(Boolean).length;
    expect(admitted).toBeGreaterThanOrEqual(Math.floor(a.cap * PACE_DECREASE));
    expect(admitted).toBeLessThanOrEqual(Math.floor(a.cap * paceBy()));
    expect(admitted).toBeLessThan(a.cap);
    // Bunches far apart keep lowering it, down to the floor and no further (however long each wait really took).
    let pace = 1;
    for (let i = 0; i < 60 && pace > PACE_FLOOR + 0.001; i++) {
      await new Promise((r) => setTimeout(r, PACE_HOLD_MS + 10));
      pace = await a.overFrequency();
      expect(pace).toBeGreaterThanOrEqual(PACE_FLOOR - 0.001);
    }
    expect(pace).toBeCloseTo(PACE_FLOOR, 2);
    await new Promise((r) => setTimeout(r, PACE_HOLD_MS + 10));
    expect(await a.overFrequency()).toBeGreaterThanOrEqual(PACE_FLOOR - 0.001);
  });

  it('without a rate limit an over-frequency answer stops every process for a second', async () => {
    const shared = prefix();
    const pacer = new SendPacer(connect(), shared, 0);
    // In Redis's own clock, so a slow machine between the calls does not eat into the second being checked.
    const [seconds, micros] = await connect().time();
    const answeredAtUs = Number(seconds) * 1_000_000 + Number(micros);
    await new SendPacer(connect(), shared, 0).overFrequency();
    const { slotUs, waitMs } = await pacer.reserve();
    expect(slotUs - answeredAtUs).toBeGreaterThanOrEqual(1_000_000);
    expect(waitMs).toBeGreaterThan(0);
  });
});
