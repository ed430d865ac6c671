import ms from 'ms';
import { RoleConfigError } from '../app/role.ts';

/** An ISO 8601 date or date-time (`2026-12-01`, `2026-12-01T08:00`, `2026-12-01 08:00:00+08:00`), nothing looser. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * `1h` (that long ago) or `2026-12-01T00:00:00Z` (absolute) → epoch ms; anything else names the problem. Only ISO
 * times: `Date.parse` alone takes `2` as 2001-02-01.
 */
export function parseSince(value: string, nowMs = Date.now(), option = '--since'): number {
  const text = value.trim();
  if (/^\d+(\.\d+)?\s*(ms|s|m|h|d)$/.test(text)) return nowMs - ms(text as ms.StringValue);
  const absolute = ISO_TIME.test(text) ? Date.parse(text.replace(' ', 'T')) : Number.NaN;
  if (Number.isNaN(absolute)) throw new RoleConfigError(`${option} must be a duration like "2h" or an ISO time like "2026-12-01T08:00:00Z", got "${value}"`);
  return absolute;
}
