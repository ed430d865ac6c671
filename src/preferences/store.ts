import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';

/** One choice: a notice kind over a channel, for one user of one app. */
export interface PreferenceKey {
  appCode: string;
  userId: string;
  noticeKind: string;
  channel: string;
}

export interface StoredPreference extends PreferenceKey {
  enabled: boolean;
  updatedAtMs: number;
}

/** notice_preferences: only choices that differ from "enabled" matter; no row is enabled. */
export class PreferenceStore {
  constructor(private readonly pool: Pool) {}

  async forUser(appCode: string, userId: string): Promise<StoredPreference[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      'SELECT notice_kind, channel, enabled, updated_at_ms FROM notice_preferences WHERE app_code = ? AND user_id = ?',
      [appCode, userId],
    );
    return rows.map((r) => ({
      appCode,
      userId,
      noticeKind: String(r.notice_kind),
      channel: String(r.channel),
      enabled: Number(r.enabled) === 1,
      updatedAtMs: Number(r.updated_at_ms),
    }));
  }

  /** All of them in one statement (an upsert per key), so an update is all or nothing. */
  async set(choices: ReadonlyArray<PreferenceKey & { enabled: boolean }>, nowMs: number): Promise<void> {
    if (choices.length === 0) return;
    await this.pool.query<ResultSetHeader>(
      `INSERT INTO notice_preferences (app_code, user_id, notice_kind, channel, enabled, updated_at_ms)
       VALUES ${choices.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}
       ON DUPLICATE KEY UPDATE enabled = VALUES(enabled), updated_at_ms = VALUES(updated_at_ms)`,
      choices.flatMap((c) => [c.appCode, c.userId, c.noticeKind, c.channel, c.enabled ? 1 : 0, nowMs]),
    );
  }
}
