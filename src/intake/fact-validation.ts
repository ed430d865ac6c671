import { createHash } from 'node:crypto';
import type { LedgerKey } from '../ledger/types.ts';
export { clipText } from '../platform/text.ts';

/**
 * What may reach the ledger, checked per fact, so one hostile row is one failed ledger row and never a failed batch.
 * Lengths are the owner contract's columns in characters (code points, as MySQL counts them), never cut: a value that
 * does not fit fails its row with a reason instead of being truncated into another value.
 */
export const LIMITS = {
  appCodeChars: 32,
  eventIdChars: 191,
  /** Tencent IM UserID: at most 32 bytes. */
  userIdBytes: 32,
  /** Intake's own bound: a raw outbox payload or MQ body larger than this is not parsed (bounded memory per poll; no channel takes one so large). */
  rawPayloadBytes: 64 * 1024,
} as const;

const CONTROL = /[\u0000-\u001f\u007f]/;

function chars(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** Why a recipient cannot be a Tencent UserID, or null when it can. */
export function recipientProblem(userId: string): string | null {
  if (userId === '') return 'user_id is missing';
  const bytes = Buffer.byteLength(userId, 'utf8');
  if (bytes > LIMITS.userIdBytes) return `user_id is ${bytes} bytes; a Tencent IM UserID is at most ${LIMITS.userIdBytes}`;
  if (CONTROL.test(userId)) return 'user_id contains control characters';
  return null;
}

/** Why an owner identifier cannot be a ledger key as it is, or null. */
export function keyProblem(appCode: string, eventId: string): string | null {
  if (chars(appCode) > LIMITS.appCodeChars) return `app_code is ${chars(appCode)} characters; the limit is ${LIMITS.appCodeChars}`;
  if (eventId === '') return 'event_id is missing';
  if (chars(eventId) > LIMITS.eventIdChars) return `event_id is ${chars(eventId)} characters; the limit is ${LIMITS.eventIdChars}`;
  return null;
}

/**
 * A key that fits for a fact whose own identifiers do not: stable (the same input gives the same key, so re-reading
 * the row is still idempotent) and distinct per input, readable enough to find with the reason.
 */
export function substituteKey<K extends Omit<LedgerKey, 'channel'>>(key: K): K {
  const digest = createHash('sha256').update(`${key.appCode}\u0000${key.sourceEventId}`).digest('hex').slice(0, 40);
  return { ...key, appCode: '', sourceEventId: `invalid-key-${digest}` };
}

/** A safe integer within signed BIGINT, or why not. Drivers hand over unsafe BIGINTs as strings. */
export function timestampProblem(name: string, value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return null;
  return `${name} ${String(value).slice(0, 40)} is not an integer within ±2^53`;
}

/** MySQL errors caused by a row's values (SQLSTATE 22/23, bad string, bad JSON), as opposed to the server being away. */
export function isDataError(err: unknown): boolean {
  const e = err as { sqlState?: string; errno?: number };
  if (typeof e?.sqlState === 'string' && (e.sqlState.startsWith('22') || e.sqlState.startsWith('23'))) return true;
  return e?.errno === 1366 || e?.errno === 1367 || e?.errno === 3140 || e?.errno === 4025;
}
