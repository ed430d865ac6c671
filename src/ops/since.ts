import ms from 'ms';
import { RoleConfigError } from '../app/role.ts';

/** `1h` (that long ago) or `2026-12-01T00:00:00Z` (absolute) → epoch ms; anything else names the problem. */
export function parseSince(value: string, nowMs = Date.now(), option = '--since'): number {
  if (/^\d+(\.\d+)?\s*(ms|s|m|h|d)$/.test(value.trim())) return nowMs - ms(value.trim() as ms.StringValue);
  const absolute = Date.parse(value);
  if (Number.isNaN(absolute)) throw new RoleConfigError(`${option} must be a duration like "2h" or an ISO time, got "${value}"`);
  return absolute;
}
