import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { InboxOwner, ListFilter } from '../store.ts';

/**
 * AIP-158 page tokens: opaque, URL-safe, and bound to the caller and filters of the call that issued them, so a
 * token replayed with other filters (or by another user) is INVALID_ARGUMENT instead of a wrong page. It carries no
 * authority: every query is scoped by the caller anyway. Signed with inbox.page_token_secret (HMAC-SHA256).
 */
const VERSION = 'i1';

function filterDigest(owner: InboxOwner, filter: ListFilter): string {
  const kinds = [...filter.kinds].sort().join(',');
  return createHash('sha256')
    .update(`${owner.appCode}\u0000${owner.userId}\u0000${filter.read}\u0000${filter.archived}\u0000${kinds}`)
    .digest('base64url')
    .slice(0, 16);
}

function sign(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body).digest('base64url').slice(0, 22);
}

export function encodePageToken(secret: string, owner: InboxOwner, filter: ListFilter, lastId: string): string {
  const body = `${VERSION}.${lastId}.${filterDigest(owner, filter)}`;
  return Buffer.from(`${body}.${sign(secret, body)}`).toString('base64url');
}

export type DecodedPageToken = { ok: true; lastId: string } | { ok: false; reason: string };

/** The id to continue below, or why the token cannot be used (never which part of the secret check failed). */
export function decodePageToken(secret: string, owner: InboxOwner, filter: ListFilter, token: string): DecodedPageToken {
  if (token.length > 200 || !/^[A-Za-z0-9_-]+$/.test(token)) return { ok: false, reason: 'page_token is not a token this service issued' };
  const parts = Buffer.from(token, 'base64url').toString('utf8').split('.');
  if (parts.length !== 4 || parts[0] !== VERSION || !/^[1-9][0-9]{0,19}$/.test(parts[1]!))
    return { ok: false, reason: 'page_token is not a token this service issued' };
  const body = parts.slice(0, 3).join('.');
  const expected = Buffer.from(sign(secret, body));
  const given = Buffer.from(parts[3]!);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { ok: false, reason: 'page_token is not a token this service issued' };
  if (parts[2] !== filterDigest(owner, filter))
    return { ok: false, reason: 'page_token was issued for other filters or another caller; repeat the request with the filters of the call that returned it' };
  return { ok: true, lastId: parts[1]! };
}
