import type { Pool, RowDataPacket } from 'mysql2/promise';
import { toLedgerRow } from './repository.ts';
import type { LedgerRow } from './types.ts';

/** What the timeline narrows to; a user or an event id is required (each has its own index). */
export interface TimelineFilter {
  userId?: string;
  eventId?: string;
  noticeKind?: string;
  status?: string;
  channel?: string;
  errorCode?: string;
  /** created_at_ms range: [sinceMs, untilMs). */
  sinceMs?: number;
  untilMs?: number;
}

/** Where the next page starts: after this fact (newest first). */
export interface TimelineCursor {
  createdAtMs: number;
  sourceName: string;
  appCode: string;
  sourceEventId: string;
}

/** One fact and its row per channel. */
export interface TimelineFact {
  sourceName: string;
  appCode: string;
  sourceEventId: string;
  eventType: string;
  userId: string;
  noticeKind: string;
  createdAtMs: number;
  rows: LedgerRow[];
}

export class TimelineFilterError extends Error {}

/**
 * A user's (or an event's) facts, newest first, each with its ledger row per channel; keyset-paged on
 * (created_at_ms, source_name, app_code, source_event_id) over idx_nde_user or idx_nde_event_id, so any age the ledger
 * still holds is one page-walk away. The other filters narrow the rows shown (a fact appears with the channels that
 * match).
 */
export async function timelinePage(
  pool: Pool,
  filter: TimelineFilter,
  after: TimelineCursor | null,
  limit: number,
): Promise<{ facts: TimelineFact[]; next: TimelineCursor | null }> {
  if (!filter.userId && !filter.eventId) throw new TimelineFilterError('give user_id or event_id');
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    where.push(sql);
    params.push(value);
  };
  if (filter.userId) add('user_id = ?', filter.userId);
  if (filter.eventId) add('source_event_id = ?', filter.eventId);
  if (filter.noticeKind) add('notice_kind = ?', filter.noticeKind);
  if (filter.status) add('status = ?', filter.status);
  if (filter.channel) add('channel = ?', filter.channel);
  if (filter.errorCode) add('last_error_code = ?', filter.errorCode);
  if (filter.sinceMs !== undefined) add('created_at_ms >= ?', filter.sinceMs);
  if (filter.untilMs !== undefined) add('created_at_ms < ?', filter.untilMs);
  if (after) {
    where.push(
      '(created_at_ms < ? OR (created_at_ms = ? AND (source_name < ? OR (source_name = ? AND (app_code < ? OR (app_code = ? AND source_event_id < ?))))))',
    );
    params.push(after.createdAtMs, after.createdAtMs, after.sourceName, after.sourceName, after.appCode, after.appCode, after.sourceEventId);
  }
  // A fact has a row per channel: read enough rows for `limit` facts and drop a last fact that may be cut.
  const rowLimit = limit * 4 + 4;
  const [raw] = await pool.query<RowDataPacket[]>(
    `SELECT * FROM notice_delivery_events WHERE ${where.join(' AND ')}
      ORDER BY created_at_ms DESC, source_name DESC, app_code DESC, source_event_id DESC, channel LIMIT ?`,
    [...params, rowLimit],
  );
  const facts: TimelineFact[] = [];
  for (const row of raw.map(toLedgerRow)) {
    const last = facts.at(-1);
    if (last && last.sourceName === row.sourceName && last.appCode === row.appCode && last.sourceEventId === row.sourceEventId) last.rows.push(row);
    else
      facts.push({
        sourceName: row.sourceName,
        appCode: row.appCode,
        sourceEventId: row.sourceEventId,
        eventType: row.eventType,
        userId: row.userId,
        noticeKind: row.noticeKind,
        createdAtMs: row.createdAtMs,
        rows: [row],
      });
  }
  const full = raw.length === rowLimit;
  if (full && facts.length > 1) facts.pop();
  const page = facts.slice(0, limit);
  const lastFact = page.at(-1);
  const more = facts.length > limit || full;
  return {
    facts: page,
    next:
      more && lastFact
        ? { createdAtMs: lastFact.createdAtMs, sourceName: lastFact.sourceName, appCode: lastFact.appCode, sourceEventId: lastFact.sourceEventId }
        : null,
  };
}

/** The cursor as an opaque URL-safe token, and back (a bad token is a filter error, not a crash). */
export function encodeCursor(cursor: TimelineCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAtMs, cursor.sourceName, cursor.appCode, cursor.sourceEventId])).toString('base64url');
}

export function decodeCursor(token: string): TimelineCursor {
  try {
    const [createdAtMs, sourceName, appCode, sourceEventId] = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as [number, string, string, string];
    if (!Number.isFinite(createdAtMs) || typeof sourceName !== 'string' || typeof appCode !== 'string' || typeof sourceEventId !== 'string')
      throw new Error('shape');
    return { createdAtMs, sourceName, appCode, sourceEventId };
  } catch {
    throw new TimelineFilterError('the page token is not one this page made');
  }
}
