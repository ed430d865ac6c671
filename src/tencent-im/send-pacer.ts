import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { loadLuaScript, runLuaScript } from '../platform/lua-scripts.ts';

/**
 * Share of the configured rate that sends are paced and admitted at. Tencent (and fake-im) count requests in any
 * one-second span as they arrive, so the arrival spread (HTTP write, network, the receiver's pauses) must fit in what
 * is left over. With a one-second stop per over-frequency answer, 0.95 was the best trade (0.96-0.98 drew answers
 * that each cost a second). Now an answer only lowers the pace a little for a little while (PACE_DECREASE), so the
 * pacer can run closer to the limit: against a fake-im that also counts refused calls, 20k-event drains with 3 deliver
 * processes, one run each: 0.95 → 93.0 % of 200/s, 0 answers; 0.98 → 95.4 %, 5; 0.985 → 95.4 %, 10; 0.99 → 92.0 %, 65.
 */
export const PACE_SHARE = 0.98;

/**
 * After a second with no sends, the first WARM_UP_MS of slots are spaced WARM_UP_SPACING times as far apart. The
 * first requests of a burst open connections (TCP, and TLS to Tencent) and run cold code, so they reach the gateway
 * later and less evenly than the ones behind them, which then catch up and bunch: without it, the busiest sliding
 * second of a drain came in its first ~1 s (bench/diagnose-rate-limit.ts with a CPU hog beside it: 197 and 198
 * arrivals; on a slower day 6 and 2 over-frequency answers per drain). 2× for 1 s did as well on the drain but made
 * a 150/s stream starting from idle queue for seconds (limit on, 100 ms poll: p99 461 ms against 168 ms with 1.5×
 * for 500 ms, which costs a drain ~30 sends once).
 */
export const WARM_UP_MS = 500;
export const WARM_UP_SPACING = 1.5;

/**
 * How far ahead of its slot a send reserves it. Reserving a whole burst's share at once (each process as its claims
 * returned) sent one deliver process's rows of a burst behind another's younger ones: 3 deliver processes at 150/s,
 * limit on, 500 ms poll: p99 736-762 ms against ~540 with one. Now each process's oldest waiting send registers as a
 * head and reserves only while the queue is at most this deep, and an older head anywhere goes first (p99 602-603).
 * A few slots plus a round trip and a timer's lateness, so the queue does not run dry (drains kept 187-188/s).
 */
export const RESERVE_AHEAD_MS = 50;

/**
 * Adaptive pace (AIMD, shared by every process through Redis): an over-frequency answer multiplies the pace by
 * PACE_DECREASE — once per PACE_HOLD_MS, so one bunch of answers counts once — down to PACE_FLOOR, and the pace
 * grows back by PACE_RECOVERY_PER_S of the full rate per second. It replaces a one-second stop of every sender. The
 * pace only ever lowers the rate below PACE_SHARE, so no sliding second is planned above the limit. 0.95 instead of
 * 0.9 (at share 0.985) drew 37 answers and 93.1 % in one drain (a noisier hour): too small a step to clear a bunch.
 */
export const PACE_DECREASE = 0.9;
export const PACE_FLOOR = 0.5;
export const PACE_RECOVERY_PER_S = 0.05;
export const PACE_HOLD_MS = 500;

/**
 * Without a rate limit, how old a look at the shared back-off may be when a send relies on it: another process's
 * back-off (a second, after an over-frequency answer) reaches this one's sends at most this late.
 */
export const NO_LIMIT_RECHECK_MS = 10;

/** The pacer's Redis scripts, in src/tencent-im/lua/ (each names its keys and arguments), read once. */
const LUA_DIR = new URL('./lua/', import.meta.url);
const PACE_VALUES = {
  PACE_RECOVERY_PER_S,
  PACE_FLOOR,
  PACE_DECREASE,
  PACE_HOLD_US: PACE_HOLD_MS * 1000,
  PACE_TTL_MS: Math.ceil(((1 - PACE_FLOOR) / PACE_RECOVERY_PER_S) * 1000) + 1000,
};
const SCRIPTS = {
  reserveSlot: loadLuaScript(LUA_DIR, 'reserveSlot-5', PACE_VALUES),
  admitSend: loadLuaScript(LUA_DIR, 'admitSend-3', PACE_VALUES),
  slowDown: loadLuaScript(LUA_DIR, 'slowDown-1', PACE_VALUES),
  backOff: loadLuaScript(LUA_DIR, 'backOff-2', PACE_VALUES),
};

/** Lua: the current pace factor (≤ 1) from the stored one and when it was set; KEY and NOW named by the caller. */

let members = 0;

/**
 * The app-wide Tencent IM send rate, shared by every deliver process through Redis. Sends take evenly spaced
 * slots (so they do not bunch), then are admitted against the last second's sends (so no sliding second exceeds
 * the limit however late a process is). BullMQ's own limiter counts job *starts* in fixed windows: a window's
 * quota starts at once and the claim statement between start and send adds its own delay, so arrivals bunched
 * (bench: 8-144 over-frequency answers per 20k-event drain at 8 jobs per 42 ms, in 5 of 6 runs). The slot is taken
 * after the claim, right before the HTTP call. One 60007 backs every process off through the same keys.
 */
export class SendPacer {
  private readonly nextFreeKey: string;
  private readonly pauseKey: string;
  private readonly logKey: string;
  private readonly burstKey: string;
  private readonly headsKey: string;
  private readonly headExpiriesKey: string;
  private readonly paceKey: string;
  readonly intervalUs: number;
  readonly warmUpIntervalUs: number;
  /** Sends admitted per sliding second. */
  readonly cap: number;
  /**
   * Local monotonic ms minus Redis ms, from the fastest replies (the least delayed is closest to the truth). It
   * creeps up a little per reply to follow clock drift; fast replies keep pulling it back down.
   */
  private clockOffsetMs = Infinity;
  private readonly memberPrefix = `${process.pid}:${Math.random().toString(36).slice(2, 8)}`;
  private readonly slots = new LocalSlots();
  /** Without a limit: the last look at the back-off (see backOffEnd), and the look in flight. */
  private noLimitLook: { atMs: number; endLocalMs: number } | null = null;
  private noLimitLookInFlight: Promise<number> | null = null;
  private readonly reservers = new ReserveTurns();

  constructor(
    private readonly redis: Redis,
    prefix: string,
    ratePerSecond: number,
    /** Called when a send is refused admission (the sliding second was full) and queues up again. */
    private readonly onRefused: () => void = () => undefined,
    /** Whose quota this paces: each provider API (sendmsg, timpush/batch) has its own. */
    api = 'tencent-im',
  ) {
    // In the queue prefix's hash slot, like the queue itself (Redis Cluster).
    const base = `${prefix}:${api}:send-pacer`;
    this.nextFreeKey = `${base}:next-free`;
    this.pauseKey = `${base}:paused-until`;
    this.logKey = `${base}:sent`;
    this.burstKey = `${base}:burst-start`;
    this.headsKey = `${base}:heads`;
    this.headExpiriesKey = `${base}:head-expiries`;
    this.paceKey = `${base}:pace`;
    this.intervalUs = ratePerSecond > 0 ? Math.ceil(1_000_000 / (ratePerSecond * PACE_SHARE)) : 0;
    this.warmUpIntervalUs = Math.ceil(this.intervalUs * WARM_UP_SPACING);
    this.cap = Math.floor(ratePerSecond * PACE_SHARE);
  }

  /**
   * Takes the next slot without waiting for it, unless it is more than `maxWaitMs` away: its start (Redis time,
   * µs), the wait (ms), the local time of the slot and whether it was taken.
   */
  async reserve(
    maxWaitMs = Infinity,
    asHead?: { age: number },
  ): Promise<{ slotUs: number; waitMs: number; slotLocalMs: number; taken: boolean; behindOlder: boolean }> {
    const maxWaitUs = Number.isFinite(maxWaitMs) ? String(Math.max(0, Math.floor(maxWaitMs * 1000))) : '1e18';
    const [slot, now, taken, behind] = (await runLuaScript(
      this.redis,
      SCRIPTS.reserveSlot,
      [this.nextFreeKey, this.burstKey, this.headsKey, this.headExpiriesKey, this.paceKey],
      [String(this.intervalUs), maxWaitUs, String(WARM_UP_MS * 1000), String(this.warmUpIntervalUs), String(asHead?.age ?? 0), asHead ? this.memberPrefix : ''],
    )) as [string, string, number, number];
    const slotUs = Number(slot);
    this.clockOffsetMs = Math.min(performance.now() - Number(now) / 1000, this.clockOffsetMs + 0.01);
    return { slotUs, waitMs: (slotUs - Number(now)) / 1000, slotLocalMs: slotUs / 1000 + this.clockOffsetMs, taken: taken === 1, behindOlder: behind === 1 };
  }

  /** Records a send now if the last second has room and no back-off is on. */
  async admit(): Promise<boolean> {
    const member = `${this.memberPrefix}:${++members}`;
    return (await runLuaScript(this.redis, SCRIPTS.admitSend, [this.logKey, this.pauseKey, this.paceKey], [String(this.cap), member])) === 1;
  }

  /**
   * Resolves when this send may go (its slot has come and it was admitted) with `{ sent: true }`; or, when no slot
   * comes within `maxWaitMs`, at once with `{ sent: false, retryInMs }`, roughly when the queue of slots will be short
   * enough, having taken no slot. `age` orders this process's waiting sends: each due slot goes to the oldest (the
   * lowest age, e.g. the event's commit time), not to whichever send reserved first.
   */
  async acquire(maxWaitMs = Infinity, age = 0): Promise<{ sent: true } | { sent: false; retryInMs: number }> {
    const deadline = performance.now() + maxWaitMs;
    if (this.intervalUs === 0) {
      // No limit: the send only waits out a back-off, as of a look at most NO_LIMIT_RECHECK_MS old.
      const slotLocalMs = await this.backOffEnd();
      const waitMs = slotLocalMs - performance.now();
      if (waitMs > maxWaitMs) return { sent: false, retryInMs: retryAfterMs(waitMs, maxWaitMs) };
      if (waitMs >= 1) await sleep(Math.ceil(waitMs));
      return { sent: true };
    }
    for (;;) {
      const reserved = await this.reserveInTurn(age, deadline);
      if (!reserved.taken) return { sent: false, retryInMs: reserved.retryInMs };
      await this.slots.take(reserved.slotLocalMs, age);
      if (await this.admit()) return { sent: true };
      // Refused (the second is full, or a back-off began): queue again behind every reserved slot. Waiting in
      // place for room instead was tried: the refused sends then went together the moment the oldest left the
      // second, which echoed each bunch a second later and drew more over-frequency answers, not fewer.
      this.onRefused();
    }
  }

  /**
   * Without a limit, when any back-off ends (local ms; in the past when none is on). One Redis look serves every send
   * of this process for NO_LIMIT_RECHECK_MS, and concurrent sends share the look in flight: a look per send was ~5 of
   * the ~6 Redis commands per C2C event left after batch jobs, and a round trip in each send.
   */
  private async backOffEnd(): Promise<number> {
    const known = this.noLimitLook;
    if (known && performance.now() - known.atMs < NO_LIMIT_RECHECK_MS) return known.endLocalMs;
    this.noLimitLookInFlight ??= this.reserve()
      .then(({ slotLocalMs }) => {
        this.noLimitLook = { atMs: performance.now(), endLocalMs: slotLocalMs };
        return slotLocalMs;
      })
      .finally(() => {
        this.noLimitLookInFlight = null;
      });
    return this.noLimitLookInFlight;
  }

  /**
   * Reserves a slot once this send is the oldest of the process's sends still without one, and only while the
   * app-wide queue of slots is at most RESERVE_AHEAD_MS deep; until then it waits here, in age order. So every
   * process reserves a little at a time, oldest first, instead of a whole burst's share at once.
   */
  private async reserveInTurn(age: number, deadline: number): Promise<{ taken: true; slotLocalMs: number } | { taken: false; retryInMs: number }> {
    const turn = await this.reservers.turn(age, deadline);
    if (!turn.ok) return { taken: false, retryInMs: Math.max(50, Math.ceil((turn.ahead * this.intervalUs) / 1000)) };
    try {
      for (;;) {
        const budget = deadline - performance.now();
        const { slotLocalMs, waitMs, taken, behindOlder } = await this.reserve(Math.min(RESERVE_AHEAD_MS, Math.max(0, budget)), { age });
        if (taken) return { taken: true, slotLocalMs };
        if (behindOlder ? budget <= 0 : waitMs > budget) {
          // A head that gives up (its lock deadline came) leaves at once rather than at its expiry.
          await this.redis.multi().zrem(this.headsKey, this.memberPrefix).zrem(this.headExpiriesKey, this.memberPrefix).exec();
          return { taken: false, retryInMs: retryAfterMs(waitMs, budget) };
        }
        // Behind another process's older send: ask again in about a slot. Otherwise when the queue is short enough.
        await sleep(Math.max(1, Math.ceil(behindOlder ? this.intervalUs / 1000 : waitMs - RESERVE_AHEAD_MS)));
      }
    } finally {
      this.reservers.next();
    }
  }

  /**
   * The provider answered over-frequency: with a rate limit, every process's pace drops a little and recovers on its
   * own (AIMD); without one (nothing to pace), every process stops for a second. Returns the pace factor now.
   */
  async overFrequency(): Promise<number> {
    if (this.intervalUs === 0) {
      await this.backOff(1000);
      return 1;
    }
    return Number(await runLuaScript(this.redis, SCRIPTS.slowDown, [this.paceKey], [])) / 1000;
  }

  /** No send starts in any process for `ms` from now; sends already waiting for a slot queue up again. */
  async backOff(ms: number): Promise<void> {
    await runLuaScript(this.redis, SCRIPTS.backOff, [this.nextFreeKey, this.pauseKey], [String(Math.ceil(ms))]);
    this.noLimitLook = null;
  }
}

/**
 * This process's reserved slots and the sends waiting for them. Every waiter brought one slot, so the two lists are
 * always the same length; a due slot goes to the oldest waiter. Why: reservations are made in the order claims
 * return, which is not the events' order (the deliver lanes fetch a poll's burst in parallel, and one lane's share
 * reaches the pacer later), and with the limit on a slot's place is most of a send's latency: at 150/s with a
 * 500 ms poll, one lane's rows of a burst were sent ~300 ms after younger rows. Swapping slots between this
 * process's own sends changes no slot's time, so the rate is the same.
 */
class LocalSlots {
  /** Local times (performance.now() ms) of the reserved slots, earliest first. */
  private readonly times: number[] = [];
  /** Waiting sends, oldest first; seq keeps equal ages in arrival order. */
  private readonly waiters: Array<{ age: number; seq: number; go: () => void }> = [];
  private seq = 0;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;

  take(slotLocalMs: number, age: number): Promise<void> {
    return new Promise((go) => {
      insertSorted(this.times, slotLocalMs, (a, b) => a - b);
      insertSorted(this.waiters, { age, seq: this.seq++, go }, oldestFirst);
      this.handOut();
    });
  }

  /** Gives every due slot to the oldest waiter, then sleeps until the next slot. */
  private handOut(): void {
    const now = performance.now();
    while (this.times.length > 0 && this.times[0]! - now < 1) {
      this.times.shift();
      this.waiters.shift()!.go();
    }
    const next = this.times[0] ?? Infinity;
    if (next === this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.timerAt = next;
    if (next !== Infinity) {
      this.timer = setTimeout(
        () => {
          this.timer = null;
          this.timerAt = Infinity;
          this.handOut();
        },
        Math.ceil(next - now),
      );
    }
  }
}

/** When a send that could not wait for the next slot (`waitMs` away, `budgetMs` allowed) should ask again. */
function retryAfterMs(waitMs: number, budgetMs: number): number {
  return Math.max(50, Math.ceil(waitMs - Math.max(0, budgetMs)));
}

/** Older events first; `seq` keeps equal ages in the order they asked. */
function oldestFirst(a: { age: number; seq: number }, b: { age: number; seq: number }): number {
  return a.age - b.age || a.seq - b.seq;
}

function insertSorted<T>(list: T[], item: T, compare: (a: T, b: T) => number): void {
  let i = list.length;
  while (i > 0 && compare(list[i - 1]!, item) > 0) i--;
  list.splice(i, 0, item);
}

/** Sends waiting for their turn to reserve, oldest first; one reserves at a time, the others wait (or give up). */
class ReserveTurns {
  private busy = false;
  private readonly waiting: Array<{ age: number; seq: number; go: (turn: { ok: true } | { ok: false; ahead: number }) => void; timer: NodeJS.Timeout | null }> =
    [];
  private seq = 0;
  private pumpScheduled = false;

  /** Resolves when it is this send's turn, or with ok false at `deadline` (and how many were ahead of it). */
  turn(age: number, deadline: number): Promise<{ ok: true } | { ok: false; ahead: number }> {
    return new Promise((go) => {
      const waiter = { age, seq: this.seq++, go, timer: null as NodeJS.Timeout | null };
      if (Number.isFinite(deadline)) {
        waiter.timer = setTimeout(
          () => {
            const at = this.waiting.indexOf(waiter);
            if (at < 0) return;
            this.waiting.splice(at, 1);
            go({ ok: false, ahead: at });
          },
          Math.max(0, deadline - performance.now()),
        );
      }
      insertSorted(this.waiting, waiter, oldestFirst);
      this.schedulePump();
    });
  }

  /** The current turn is over. */
  next(): void {
    this.busy = false;
    this.schedulePump();
  }

  // After the current macrotask, so sends that ask in the same tick (one claim batch) are ordered before one goes.
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      if (this.busy) return;
      const waiter = this.waiting.shift();
      if (!waiter) return;
      if (waiter.timer) clearTimeout(waiter.timer);
      this.busy = true;
      waiter.go({ ok: true });
    });
  }
}
