/** What the dashboard knows of one backend: reachable or not, since when, and when it last looked. */
export interface BackendState {
  ok: boolean;
  /** When it was last found unreachable after being reachable (ms), or null while it is reachable. */
  down_since_ms: number | null;
  checked_ms: number | null;
}

/** One probe's result folded into the state: the outage keeps its first moment until a probe succeeds. */
export function nextBackendState(previous: BackendState, ok: boolean, nowMs: number): BackendState {
  if (ok) return { ok: true, down_since_ms: null, checked_ms: nowMs };
  return { ok: false, down_since_ms: previous.ok || previous.down_since_ms === null ? nowMs : previous.down_since_ms, checked_ms: nowMs };
}

/**
 * Probes MySQL and Redis every few seconds (each with a deadline), so every page can say within seconds that one is
 * unreachable and since when, instead of looking normal (issue 47: bull-board said "No queues" with Redis down).
 */
export class BackendWatch {
  private readonly states = new Map<string, BackendState>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly probes: Readonly<Record<string, () => Promise<unknown>>>,
    private readonly intervalMs = 3000,
    private readonly deadlineMs = 1500,
    private readonly now: () => number = Date.now,
  ) {
    for (const name of Object.keys(probes)) this.states.set(name, { ok: true, down_since_ms: null, checked_ms: null });
  }

  start(): void {
    const tick = () => {
      void this.check().finally(() => {
        if (this.timer) this.timer = setTimeout(tick, this.intervalMs);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  async check(): Promise<void> {
    await Promise.all(
      Object.entries(this.probes).map(async ([name, probe]) => {
        let deadline: NodeJS.Timeout | undefined;
        const ok = await Promise.race([
          probe().then(
            () => true,
            () => false,
          ),
          new Promise<boolean>((resolve) => (deadline = setTimeout(() => resolve(false), this.deadlineMs))),
        ]);
        clearTimeout(deadline);
        this.states.set(name, nextBackendState(this.states.get(name)!, ok, this.now()));
      }),
    );
  }

  /** Every backend's state, by name. */
  snapshot(): Record<string, BackendState> {
    return Object.fromEntries(this.states);
  }

  isDown(name: string): boolean {
    return this.states.get(name)?.ok === false;
  }
}
