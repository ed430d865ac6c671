import type { Pool, PoolConnection, RowDataPacket } from 'mysql2/promise';
import type { LedgerRow } from '../ledger/types.ts';
import { retryOnDeadlock } from '../platform/deadlock-retry.ts';

export interface DigestRule {
  windowMs: number;
  /** Send the first notice of a window on its own at once; the rest wait for the summary. */
  firstAtOnce: boolean;
}

/** What one row does in its scope's digest, decided under the scope's row lock. */
export type DigestStep =
  /** The first of a window with firstAtOnce: sent on its own now. */
  | { step: 'send_alone' }
  /** This row leads the window: it waits until the window closes, then sends the summary. */
  | { step: 'lead'; untilMs: number }
  /** Counted in a window another row leads; ends digested. */
  | { step: 'joined'; leaderEventId: string }
  /** The leader at its window's close: send one summary carrying `count` and the newest notice. */
  | { step: 'summarize'; count: number; newest: { sourceEventId: string; eventType: string; payload: string | null } };

interface Scope {
  appCode: string;
  userId: string;
  channel: string;
  noticeKind: string;
  digestKey: string;
}

const SCOPE_WHERE = 'app_code = ? AND user_id = ? AND channel = ? AND notice_kind = ? AND digest_key = ?';
const scopeParams = (s: Scope) => [s.appCode, s.userId, s.channel, s.noticeKind, s.digestKey];

/**
 * notice_digests / notice_digest_members: a digest is a ledger object. Joining is a member row keyed by the ledger
 * row (a re-claimed row joins once); the leader closes its window under the scope's lock, so no member joins a closed
 * window and the count it sends is the count, however often the leader is re-claimed.
 */
export class DigestStore {
  constructor(private readonly pool: Pool) {}

  step(row: LedgerRow, digestKey: string, rule: DigestRule, nowMs: number): Promise<DigestStep> {
    return retryOnDeadlock(() => this.inTransaction((conn) => this.decide(conn, row, digestKey, rule, nowMs)));
  }

  private async inTransaction<T>(work: (conn: PoolConnection) => Promise<T>): Promise<T> {
    const conn = await this.pool.getConnection();
    try {
      await conn.beginTransaction();
      const result = await work(conn);
      await conn.commit();
      return result;
    } catch (err) {
      await conn.rollback().catch(() => undefined);
      throw err;
    } finally {
      conn.release();
    }
  }

  private async decide(conn: PoolConnection, row: LedgerRow, digestKey: string, rule: DigestRule, nowMs: number): Promise<DigestStep> {
    const scope: Scope = { appCode: row.appCode, userId: row.userId, channel: row.channel, noticeKind: row.noticeKind, digestKey };
    // The scope's row exists before it is locked, so two first rows queue on one lock instead of a gap lock.
    await conn.query(
      `INSERT IGNORE INTO notice_digests (app_code, user_id, channel, notice_kind, digest_key, seq, state, opened_at_ms, closes_at_ms, updated_at_ms)
       VALUES (?, ?, ?, ?, ?, 0, 'closed', 0, 0, ?)`,
      [...scopeParams(scope), nowMs],
    );
    const [[current]] = (await conn.query<RowDataPacket[]>(`SELECT * FROM notice_digests WHERE ${SCOPE_WHERE} FOR UPDATE`, scopeParams(scope))) as [
      RowDataPacket[],
      unknown,
    ];
    const s = current!;
    const [[member]] = (await conn.query<RowDataPacket[]>(
      'SELECT seq, leads FROM notice_digest_members WHERE source_name = ? AND app_code = ? AND source_event_id = ? AND channel = ?',
      [row.sourceName, row.appCode, row.sourceEventId, row.channel],
    )) as [RowDataPacket[], unknown];

    if (member) {
      const seq = Number(member.seq);
      if (Number(member.leads) !== 1) return { step: 'joined', leaderEventId: s.leader_event_id === null ? '' : String(s.leader_event_id) };
      const open = Number(s.seq) === seq && s.state === 'open';
      // A leader whose window is still open waits on; at or after its close it closes the window and counts it (again,
      // the same count, if it was re-claimed after closing: nothing joins a closed window).
      if (open && nowMs < Number(s.closes_at_ms)) return { step: 'lead', untilMs: Number(s.closes_at_ms) };
      if (open) await conn.query(`UPDATE notice_digests SET state = 'closed', updated_at_ms = ? WHERE ${SCOPE_WHERE}`, [nowMs, ...scopeParams(scope)]);
      return this.summary(conn, scope, seq);
    }

    const expiredUnled = s.leader_event_id === null && nowMs >= Number(s.closes_at_ms);
    if (s.state === 'closed' || expiredUnled) {
      const seq = Number(s.seq) + 1;
      const closesAt = nowMs + rule.windowMs;
      await conn.query(
        `UPDATE notice_digests SET seq = ?, state = 'open', opened_at_ms = ?, closes_at_ms = ?, leader_source_name = ?, leader_event_id = ?,
          updated_at_ms = ? WHERE ${SCOPE_WHERE}`,
        [seq, nowMs, closesAt, rule.firstAtOnce ? null : row.sourceName, rule.firstAtOnce ? null : row.sourceEventId, nowMs, ...scopeParams(scope)],
      );
      if (rule.firstAtOnce) return { step: 'send_alone' };
      await this.addMember(conn, row, scope, seq, true);
      return { step: 'lead', untilMs: closesAt };
    }
    const leads = s.leader_event_id === null;
    await this.addMember(conn, row, scope, Number(s.seq), leads);
    if (leads) {
      await conn.query(`UPDATE notice_digests SET leader_source_name = ?, leader_event_id = ?, updated_at_ms = ? WHERE ${SCOPE_WHERE}`, [
        row.sourceName,
        row.sourceEventId,
        nowMs,
        ...scopeParams(scope),
      ]);
      return { step: 'lead', untilMs: Number(s.closes_at_ms) };
    }
    return { step: 'joined', leaderEventId: String(s.leader_event_id) };
  }

  private async addMember(conn: PoolConnection, row: LedgerRow, scope: Scope, seq: number, leads: boolean): Promise<void> {
    await conn.query(
      `INSERT IGNORE INTO notice_digest_members (source_name, app_code, source_event_id, channel, user_id, notice_kind, digest_key, seq, leads, created_at_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        row.sourceName,
        row.appCode,
        row.sourceEventId,
        row.channel,
        row.userId,
        row.noticeKind,
        scope.digestKey,
        seq,
        leads ? 1 : 0,
        row.sourceCreatedAtMs ?? row.createdAtMs,
      ],
    );
  }

  private async summary(conn: PoolConnection, scope: Scope, seq: number): Promise<DigestStep> {
    const [members] = await conn.query<RowDataPacket[]>(
      `SELECT m.source_event_id, e.event_type, e.payload FROM notice_digest_members m
         JOIN notice_delivery_events e ON e.source_name = m.source_name AND e.app_code = m.app_code AND e.source_event_id = m.source_event_id AND
           e.channel = m.channel
        WHERE m.app_code = ? AND m.user_id = ? AND m.channel = ? AND m.notice_kind = ? AND m.digest_key = ? AND m.seq = ?
        ORDER BY m.created_at_ms DESC, m.source_event_id DESC`,
      [...scopeParams(scope), seq],
    );
    const newest = members[0]!;
    return {
      step: 'summarize',
      count: members.length,
      newest: {
        sourceEventId: String(newest.source_event_id),
        eventType: String(newest.event_type),
        payload: newest.payload === null ? null : String(newest.payload),
      },
    };
  }
}
