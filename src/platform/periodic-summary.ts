/**
 * Counts that would be one log line per occurrence (a hole per row of a sparse outbox), summed and written at most
 * once per interval: the first occurrence at once, the rest as one line with totals.
 */
export class PeriodicSummary<K extends string> {
  private totals: Partial<Record<K, number>> = {};
  private pending = false;
  private lastEmitMs = -Infinity;

  constructor(
    private readonly intervalMs: number,
    private readonly emit: (totals: Record<K, number>, sinceMs: number) => void,
  ) {}

  add(nowMs: number, counts: Record<K, number>): void {
    for (const [k, v] of Object.entries(counts) as Array<[K, number]>) this.totals[k] = (this.totals[k] ?? 0) + v;
    this.pending = true;
    this.tick(nowMs);
  }

  /** Writes the line if something is pending and the interval has passed; call it on every poll. */
  tick(nowMs: number): void {
    if (!this.pending || nowMs - this.lastEmitMs < this.intervalMs) return;
    this.emit(this.totals as Record<K, number>, this.lastEmitMs);
    this.totals = {};
    this.pending = false;
    this.lastEmitMs = nowMs;
  }
}
