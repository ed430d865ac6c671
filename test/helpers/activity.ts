import type { Pool } from 'mysql2/promise';

export interface ActivityRow {
  event_id: string;
  event_type: string;
  user_id: string | null;
  payload: unknown;
  created_at_ms?: number;
}

export async function insertActivityRows(db: Pool, database: string, rows: readonly ActivityRow[]): Promise<void> {
  await db.query(
    `INSERT INTO \`${database}\`.activity_outbox (app_code, event_id, event_type, user_id, payload, created_at_ms) VALUES ${rows.map(() => "('lalu', ?, ?, ?, ?, ?)").join(', ')}`,
    rows.flatMap((r) => [
      r.event_id,
      r.event_type,
      r.user_id,
      typeof r.payload === 'string' ? r.payload : JSON.stringify(r.payload),
      r.created_at_ms ?? 1800000000000,
    ]),
  );
}

/** The n-th of the three activity event types, each to its own user (60000 + n). */
export function activityEvent(n: number): ActivityRow {
  const base = { event_id: `aev_${n}`, user_id: String(60000 + n), created_at_ms: 1800000000000 + n };
  switch (n % 3) {
    case 0:
      return {
        ...base,
        event_type: 'ActivityRewardGranted',
        payload: { activity_id: 'act_spring', grant_id: `g${n}`, reward_items: [{ resource_id: 101, count: 1 }] },
      };
    case 1:
      return { ...base, event_type: 'TaskCompleted', payload: { task_id: 'task_daily', progress: 5, target: 5 } };
    default:
      return {
        ...base,
        event_type: 'SystemNotice',
        payload: { title_key: 'notice.maintenance.title', body_key: 'notice.maintenance.body', params: { minutes: 30 } },
      };
  }
}
