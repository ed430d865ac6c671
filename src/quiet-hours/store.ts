import DataLoader from 'dataloader';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { groupCommit } from '../platform/group-commit.ts';
import type { QuietHours, QuietWindow } from './window.ts';

/** One user of one app. */
export interface UserKey {
  appCode: string;
  userId: string;
}

export const keyString = (k: UserKey) => `${k.appCode}\u0000${k.userId}`;

/** A notice_quiet_hours row's settings (its time_zone and windows columns). */
export function quietHoursOfRow(r: RowDataPacket): QuietHours {
  return { timeZone: String(r.time_zone), windows: JSON.parse(String(r.windows)) as QuietWindow[] };
}

/** notice_quiet_hours: one row per user who set quiet hours; none = never quiet. */
export class QuietHoursStore {
  private readonly batch = groupCommit();
  private readonly loader: DataLoader<UserKey, QuietHours | null, string>;

  constructor(private readonly pool: Pool) {
    // Rows of one claim batch are looked up together: one statement, not one per row.
    this.loader = new DataLoader((keys) => this.load(keys), { cache: false, cacheKeyFn: keyString, batchScheduleFn: this.batch.schedule });
  }

  get(appCode: string, userId: string): Promise<QuietHours | null> {
    return this.loader.load({ appCode, userId });
  }

  /** Replaces the user's quiet hours; no windows removes them. */
  async set(appCode: string, userId: string, hours: QuietHours, nowMs: number): Promise<void> {
    if (hours.windows.length === 0) {
      await this.pool.query('DELETE FROM notice_quiet_hours WHERE app_code = ? AND user_id = ?', [appCode, userId]);
      return;
    }
    const windows = JSON.stringify(hours.windows.map((w) => ({ start: w.start, end: w.end })));
    await this.pool.query(
      `INSERT INTO notice_quiet_hours (app_code, user_id, time_zone, windows, updated_at_ms) VALUES (?, ?, ?, ?, ?)
       ON DUPLICATE KEY UPDATE time_zone = VALUES(time_zone), windows = VALUES(windows), updated_at_ms = VALUES(updated_at_ms)`,
      [appCode, userId, hours.timeZone, windows, nowMs],
    );
  }

  private async load(keys: readonly UserKey[]): Promise<Array<QuietHours | null>> {
    const [rows] = await this.batch.track(
      this.pool.query<RowDataPacket[]>(
        `SELECT app_code, user_id, time_zone, windows FROM notice_quiet_hours WHERE (app_code, user_id) IN (${keys.map(() => '(?, ?)').join(', ')})`,
        keys.flatMap((k) => [k.appCode, k.userId]),
      ),
    );
    const found = new Map(rows.map((r) => [keyString({ appCode: String(r.app_code), userId: String(r.user_id) }), quietHoursOfRow(r)]));
    return keys.map((k) => found.get(keyString(k)) ?? null);
  }
}
