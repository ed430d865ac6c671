import { z } from 'zod';
import { readCaller } from '../../../preferences/caller.ts';
import type { ArchiveFilter, InboxOwner, ListFilter, ReadFilter } from '../store.ts';

/** Request checks of the inbox API: each problem named, so the gateway's developer sees what to fix. */
export const MAX_IDS_PER_CALL = 100;
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

const kinds = z.array(z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, 'kinds: each must be a notice kind such as "room_notice"')).max(20, 'kinds: at most 20');
/** Item ids are BIGINT UNSIGNED: a decimal beyond its range names no item, and is the caller's mistake, not a retry. */
const MAX_ITEM_ID = 18_446_744_073_709_551_615n;
const isItemId = (s: string) => /^[1-9][0-9]{0,19}$/.test(s) && BigInt(s) <= MAX_ITEM_ID;
const id = z.string().refine(isItemId, 'ids: each must be a decimal item id from 1 to 2^64-1');

export class InvalidRequest extends Error {}

export function ownerOf(raw: unknown): InboxOwner {
  const owner = readCaller(raw);
  if ('problem' in owner) throw new InvalidRequest(owner.problem);
  return owner;
}

export function kindsOf(raw: unknown): string[] {
  const parsed = kinds.safeParse(raw ?? []);
  if (!parsed.success) throw new InvalidRequest(parsed.error.issues[0]!.message);
  return parsed.data;
}

export function idsOf(raw: unknown): string[] {
  const list = z.array(id).safeParse(raw ?? []);
  if (!list.success) throw new InvalidRequest(list.error.issues[0]!.message);
  if (list.data.length === 0) throw new InvalidRequest('ids: at least one id is required');
  if (list.data.length > MAX_IDS_PER_CALL) throw new InvalidRequest(`ids: at most ${MAX_IDS_PER_CALL} per call, got ${list.data.length}`);
  return [...new Set(list.data)];
}

/** `up_to_id` of MarkAllNotificationsRead: empty for every item, else one decimal item id. */
export function upToIdOf(raw: unknown): string | null {
  if (raw === undefined || raw === null || raw === '') return null;
  if (typeof raw !== 'string' || !isItemId(raw))
    throw new InvalidRequest(`up_to_id must be a decimal item id from 1 to 2^64-1 (or empty for all), got "${String(raw).slice(0, 40)}"`);
  return raw;
}

export function pageSizeOf(raw: unknown): number {
  const n = Number(raw ?? 0);
  if (!Number.isInteger(n) || n < 0) throw new InvalidRequest(`page_size must be 0 or more, got ${String(raw)}`);
  return n === 0 ? DEFAULT_PAGE_SIZE : Math.min(n, MAX_PAGE_SIZE);
}

const READ: Record<string, ReadFilter> = { READ_FILTER_UNSPECIFIED: 'all', READ_FILTER_UNREAD: 'unread', READ_FILTER_READ: 'read' };
const ARCHIVED: Record<string, ArchiveFilter> = { ARCHIVE_FILTER_UNSPECIFIED: 'exclude', ARCHIVE_FILTER_ONLY: 'only', ARCHIVE_FILTER_INCLUDE: 'include' };

export function filterOf(req: { read?: unknown; archived?: unknown; kinds?: unknown }): ListFilter {
  const read = READ[String(req.read ?? 'READ_FILTER_UNSPECIFIED')];
  const archived = ARCHIVED[String(req.archived ?? 'ARCHIVE_FILTER_UNSPECIFIED')];
  if (!read) throw new InvalidRequest(`read: unknown filter ${String(req.read)}`);
  if (!archived) throw new InvalidRequest(`archived: unknown filter ${String(req.archived)}`);
  return { read, archived, kinds: kindsOf(req.kinds) };
}
