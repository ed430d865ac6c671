/**
 * Gap-safe outbox cursor state, as pure functions.
 *
 * InnoDB hands out AUTO_INCREMENT ids at insert time, so id 101 can become visible before id 100, and a rolled
 * back insert leaves a hole forever. A cursor that jumps to "max id seen" would skip 100 for good. Instead we keep
 * the highest id read plus the holes below it, re-read the holes on every poll, and give a hole up only after
 * `gapGraceMs` (longer than the owner's longest transaction), measured from when that hole was first seen.
 */
export type GapRange = [fromId: number, toId: number, firstSeenMs: number];

export interface CursorState {
  highWaterId: number;
  gaps: GapRange[];
  /** Which row stood at highWaterId (rowIdentity), to tell after a failover whether the outbox is the one read. */
  highWaterRow?: string | null;
}

export interface AdvanceResult {
  state: CursorState;
  /** Holes given up on after the grace period: ids that never became visible. */
  skipped: GapRange[];
}

export const INITIAL_CURSOR: CursorState = { highWaterId: 0, gaps: [] };

/**
 * @param newIds ids read above the high-water mark in one statement (so they share one snapshot), ascending
 * @param filledIds ids found inside known gaps
 */
export function advanceCursor(state: CursorState, newIds: readonly number[], filledIds: readonly number[], nowMs: number, gapGraceMs: number): AdvanceResult {
  let gaps = removeIds(state.gaps, filledIds);
  let highWaterId = state.highWaterId;
  let expected = highWaterId + 1;
  const opened: GapRange[] = [];
  for (const id of newIds) {
    if (id < expected) continue;
    if (id > expected) opened.push([expected, id - 1, nowMs]);
    expected = id + 1;
  }
  if (newIds.length > 0) highWaterId = Math.max(highWaterId, expected - 1);
  gaps = [...gaps, ...opened];
  const skipped = gaps.filter((g) => nowMs - g[2] >= gapGraceMs);
  gaps = gaps.filter((g) => nowMs - g[2] < gapGraceMs);
  return { state: { highWaterId, gaps }, skipped };
}

export function removeIds(gaps: readonly GapRange[], ids: readonly number[]): GapRange[] {
  if (ids.length === 0) return [...gaps];
  const sorted = [...ids].sort((a, b) => a - b);
  const result: GapRange[] = [];
  for (const [from, to, seen] of gaps) {
    let start = from;
    for (const id of sorted) {
      if (id < start || id > to) continue;
      if (id > start) result.push([start, id - 1, seen]);
      start = id + 1;
    }
    if (start <= to) result.push([start, to, seen]);
  }
  return result;
}

/** Ids in a list of ranges: open holes ([from, to, firstSeen]) or watched ones ([from, to]). */
export function countGapIds(gaps: ReadonlyArray<readonly [number, number, ...number[]]>): number {
  return gaps.reduce((n, [from, to]) => n + (to - from + 1), 0);
}

export function serializeGaps(gaps: readonly GapRange[]): string {
  return JSON.stringify(gaps);
}

export function parseGaps(text: string | null): GapRange[] {
  if (!text) return [];
  const parsed = JSON.parse(text) as unknown;
  if (!Array.isArray(parsed)) return [];
  return parsed.filter((g): g is GapRange => Array.isArray(g) && g.length === 3 && g.every((n) => Number.isSafeInteger(n)));
}

/**
 * The cursor for an outbox whose newest id is below it: the outbox moved backwards (a failover to a replica that
 * lacked its last rows, or a restore), and the owner's next rows take ids the cursor had passed. The cursor goes back
 * to the newest row; holes above it are dropped (those ids are handed out again). Null: the outbox is not behind.
 */
export function rewoundTo(state: CursorState, outboxNewestId: number): CursorState | null {
  if (outboxNewestId >= state.highWaterId) return null;
  const gaps: GapRange[] = [];
  for (const [from, to, seen] of state.gaps) if (from <= outboxNewestId) gaps.push([from, Math.min(to, outboxNewestId), seen]);
  return { highWaterId: outboxNewestId, gaps, highWaterRow: null };
}
