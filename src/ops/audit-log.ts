import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { clipText } from '../platform/text.ts';

export interface OperatorAction {
  actor: string;
  via: 'dashboard' | 'cli';
  action: 'requeue_failed' | 'requeue_rejected' | 'revoke';
  matched: number;
  affected: number;
  detail: Record<string, unknown>;
}

export interface RecordedAction extends OperatorAction {
  id: number;
  atMs: number;
}

/** An operator action as the dashboard and the CLI show it (snake_case, epoch ms for scripts). */
export function presentAction(a: RecordedAction) {
  return { at_ms: a.atMs, actor: a.actor, via: a.via, action: a.action, matched: a.matched, affected: a.affected, detail: a.detail };
}

/** notice_operator_actions: who changed what in the pipeline, kept in MySQL next to the ledger it changed. */
export class AuditLog {
  constructor(
    private readonly pool: Pool,
    private readonly now: () => number = Date.now,
  ) {}

  async record(action: OperatorAction): Promise<number> {
    const [result] = await this.pool.query<ResultSetHeader>(
      'INSERT INTO notice_operator_actions (at_ms, actor, via, action, matched, affected, detail) VALUES (?, ?, ?, ?, ?, ?, ?)',
      [this.now(), clipText(action.actor, 191), action.via, action.action, action.matched, action.affected, JSON.stringify(action.detail)],
    );
    return result.insertId;
  }

  /** A long action's progress (and, last, its end) on the row `record` wrote when it began. */
  async update(id: number, progress: Pick<OperatorAction, 'matched' | 'affected' | 'detail'>): Promise<void> {
    await this.pool.query<ResultSetHeader>('UPDATE notice_operator_actions SET matched = ?, affected = ?, detail = ? WHERE id = ?', [
      progress.matched,
      progress.affected,
      JSON.stringify(progress.detail),
      id,
    ]);
  }

  /** Newest first (idx_noa_at). */
  async recent(limit = 20): Promise<RecordedAction[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>('SELECT * FROM notice_operator_actions ORDER BY at_ms DESC, id DESC LIMIT ?', [limit]);
    return rows.map((r) => ({
      id: Number(r.id),
      atMs: Number(r.at_ms),
      actor: String(r.actor),
      via: r.via,
      action: r.action,
      matched: Number(r.matched),
      affected: Number(r.affected),
      detail: JSON.parse(String(r.detail)) as Record<string, unknown>,
    }));
  }
}
