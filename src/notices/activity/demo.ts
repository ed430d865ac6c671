import { randomUUID } from 'node:crypto';
import type { Pool } from 'mysql2/promise';
import { quoteIdentifier } from '../../platform/mysql.ts';

/** Demo traffic only: plays activity-service, committing rewards, finished tasks and system notices to activity_outbox. */
/** `exampleUser` gets the first row, a system notice (an inbox item), so the README's example user has one at once. */
export async function writeDemoActivityRows(pool: Pool, activityDatabase: string, count: number, nowMs = Date.now(), exampleUser?: string): Promise<number> {
  const rows = Array.from({ length: count }, (_, i) => {
    const userId = i === 0 && exampleUser ? exampleUser : String(40000 + Math.floor(Math.random() * 100));
    const turn = (nowMs / 1000 + i) % 3;
    const kind = i === 0 && exampleUser ? 'SystemNotice' : turn < 1 ? 'ActivityRewardGranted' : turn < 2 ? 'TaskCompleted' : 'SystemNotice';
    const payload =
      kind === 'ActivityRewardGranted'
        ? { activity_id: 'act_spring', grant_id: `grant_${randomUUID().slice(0, 8)}`, reward_items: [{ resource_id: 101, name: 'frame', count: 1 }] }
        : kind === 'TaskCompleted'
          ? { task_id: 'task_daily_gift', activity_id: 'act_spring', progress: 5, target: 5, reward_items: [{ resource_id: 7, name: 'coin', count: 50 }] }
          : { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body', params: { start: '02:00', minutes: 30 } };
    return ['lalu', `aev_${randomUUID()}`, kind, userId, JSON.stringify(payload), nowMs];
  });
  await pool.query(
    `INSERT INTO ${quoteIdentifier(activityDatabase)}.activity_outbox (app_code, event_id, event_type, user_id, payload, created_at_ms) VALUES
      ${rows.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}`,
    rows.flat(),
  );
  return rows.length;
}
