import ms from 'ms';
import { z } from 'zod';

/** A duration written as `500ms`, `30s`, `5m`, `1h` (parsed by `ms`), or a plain number of milliseconds. */
export const durationMs = z.union([z.number().int().nonnegative(), z.string()]).transform((value, ctx) => {
  if (typeof value === 'number') return value;
  const parsed = /^\s*\d+(\.\d+)?\s*(ms|s|m|h|d)\s*$/.test(value) ? ms(value.trim() as ms.StringValue) : undefined;
  if (parsed === undefined || !Number.isFinite(parsed) || parsed < 0) {
    ctx.addIssue({ code: 'custom', message: `expected a duration like "500ms", "30s" or "5m", got "${value}"` });
    return z.NEVER;
  }
  return Math.round(parsed);
});
