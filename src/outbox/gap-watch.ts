import { countGapIds, removeIds, type GapRange } from './gap-tracker.ts';

/**
 * Late-commit watching, as pure functions. A hole still empty after gap_grace may be a rolled-back insert (empty
 * forever), an id the writer never uses (auto_increment_increment > 1), or an owner transaction slower than we
 * guessed. Only the last matters, and it must not be lost: given-up holes are kept in chunks and re-checked by
 * primary key at growing intervals until `horizon` after they were first seen.
 */
export type IdRange = [fromId: number, toId: number];

export interface WatchChunk {
  fromId: number;
  toId: number;
  ranges: IdRange[];
  holeIds: number;
  firstSeenMs: number;
  nextCheckAtMs: number;
  checks: number;
}

/** Ranges per chunk: one primary-key statement re-checks a whole chunk. */
export const MAX_RANGES_PER_CHUNK = 200;
/** Re-checks slow down to at most one an hour per chunk. */
export const MAX_CHECK_INTERVAL_MS = 3600_000;

/**
 * When a chunk is looked at next: one grace after the previous look, doubling with each check (capped hourly), and
 * a last look exactly at the horizon. `null` once the horizon has passed: stop watching.
 */
export function nextCheckAt(firstSeenMs: number, checks: number, nowMs: number, graceMs: number, horizonMs: number): number | null {
  const endMs = firstSeenMs + horizonMs;
  if (nowMs >= endMs) return null;
  const interval = Math.min(Math.max(graceMs, 1000) * 2 ** Math.min(checks, 30), MAX_CHECK_INTERVAL_MS);
  return Math.min(nowMs + interval, endMs);
}

/** Holes just given up, grouped into chunks of consecutive ranges. */
export function chunksFor(skipped: readonly GapRange[], nowMs: number, graceMs: number, horizonMs: number): WatchChunk[] {
  const sorted = [...skipped].sort((a, b) => a[0] - b[0]);
  const chunks: WatchChunk[] = [];
  for (let i = 0; i < sorted.length; i += MAX_RANGES_PER_CHUNK) {
    const part = sorted.slice(i, i + MAX_RANGES_PER_CHUNK);
    const ranges = part.map(([from, to]): IdRange => [from, to]);
    const firstSeenMs = Math.min(...part.map((g) => g[2]));
    const next = nextCheckAt(firstSeenMs, 0, nowMs, graceMs, horizonMs);
    if (next === null) continue; // a horizon shorter than the grace: nothing left to watch
    chunks.push({
      fromId: ranges[0]![0],
      toId: ranges[ranges.length - 1]![1],
      ranges,
      holeIds: countGapIds(ranges),
      firstSeenMs,
      nextCheckAtMs: next,
      checks: 0,
    });
  }
  return chunks;
}

export type CheckOutcome = { kind: 'filled' } | { kind: 'abandoned'; holeIds: number } | { kind: 'watching'; chunk: WatchChunk };

/** A chunk after one look that found `foundIds` committed: done, given up for good, or rescheduled. */
export function afterCheck(chunk: WatchChunk, foundIds: readonly number[], nowMs: number, graceMs: number, horizonMs: number): CheckOutcome {
  const ranges = removeIds(
    chunk.ranges.map(([from, to]): GapRange => [from, to, 0]),
    foundIds,
  ).map(([from, to]): IdRange => [from, to]);
  if (ranges.length === 0) return { kind: 'filled' };
  const next = nextCheckAt(chunk.firstSeenMs, chunk.checks + 1, nowMs, graceMs, horizonMs);
  if (next === null) return { kind: 'abandoned', holeIds: countGapIds(ranges) };
  return { kind: 'watching', chunk: { ...chunk, ranges, holeIds: countGapIds(ranges), nextCheckAtMs: next, checks: chunk.checks + 1 } };
}

export function parseRanges(text: string): IdRange[] {
  const parsed = JSON.parse(text) as unknown;
  if (!Array.isArray(parsed)) return [];
  return parsed.filter((r): r is IdRange => Array.isArray(r) && r.length === 2 && r.every((n) => Number.isSafeInteger(n)));
}
