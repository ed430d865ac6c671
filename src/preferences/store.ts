import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { groupCommit } from '../platform/group-commit.ts';

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

const keyString = (k: PreferenceKey) => `${k.appCode}\u0000${k.userId}\u0000${k.noticeKind}\u0000${k.channel}`;

/** notice_preferences: only choices that differ from "enabled" matter; no row is enabled. */
export class PreferenceStore {
  private readonly batch = groupCommit();
  private waiting: Array<{ key: PreferenceKey; resolve(off: boolean): void; reject(err: unknown): void }> = [];

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
      `INSERT INTO notice_preferences (app_code, user_id, notice_kind, channel, enabled, updated_at_ms) VALUES ${choices.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}
       ON DUPLICATE KEY UPDATE enabled = VALUES(enabled), updated_at_ms = VALUES(updated_at_ms)`,
      choices.flatMap((c) => [c.appCode, c.userId, c.noticeKind, c.channel, c.enabled ? 1 : 0, nowMs]),
    );
  }

  /**
   * Whether the user turned this kind off on this channel. Calls made while a look-up is in flight are answered by
   * one statement together (group commit), so a claim batch costs one statement, not one per row.
   */
  isOff(key: PreferenceKey): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ key, resolve, reject });
      if (this.waiting.length === 1) this.batch.schedule(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const calls = this.waiting.splice(0);
    if (calls.length === 0) return;
    const keys = [...new Map(calls.map((c) => [keyString(c.key), c.key])).values()];
    try {
      const [rows] = await this.batch.track(
        this.pool.query<RowDataPacket[]>(
          `SELECT app_code, user_id, notice_kind, channel FROM notice_preferences
            WHERE enabled = 0 AND (app_code, user_id, notice_kind, channel) IN (${keys.map(() => '(?, ?, ?, ?)').join(', ')})`,
          keys.flatMap((k) => [k.appCode, k.userId, k.noticeKind, k.channel]),
        ),
      );
      const off = new Set(
        rows.map((r) => keyString({ appCode: String(r.app_code), userId: String(r.user_id), noticeKind: String(r.notice_kind), channel: String(r.channel) })),
      );
      for (const c of calls) c.resolve(off.has(keyString(c.key)));
    } catch (err) {
      for (const c of calls) c.reject(err);
    }
  }
}
