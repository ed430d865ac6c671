import type { MappedEvent } from './types.ts';

export const NOTICE_REVOKED = 'NoticeRevoked';

/**
 * Any source's `NoticeRevoked {event_id}` fact: the owner takes back the notices of another fact of the same source
 * (and app). Null for every other event type; a NoticeRevoked without a usable event_id is malformed, named.
 */
export function revocationOf(eventType: unknown, payload: unknown): MappedEvent | null {
  if (eventType !== NOTICE_REVOKED) return null;
  let body: unknown = payload;
  if (typeof payload === 'string' || Buffer.isBuffer(payload)) {
    try {
      body = JSON.parse(String(payload));
    } catch {
      body = null;
    }
  }
  const target = body && typeof body === 'object' ? (body as { event_id?: unknown }).event_id : undefined;
  if (typeof target !== 'string' || target === '')
    return { kind: 'malformed', eventType: NOTICE_REVOKED, userId: '', noticeKind: '', reason: 'NoticeRevoked: payload.event_id must be a non-empty string' };
  return { kind: 'revoke', eventType: NOTICE_REVOKED, targetEventId: target };
}
