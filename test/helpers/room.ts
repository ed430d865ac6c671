import type { Pool } from 'mysql2/promise';

export interface RoomFactInput {
  event_id: string;
  event_type?: string;
  app_code?: string;
  room_id?: string;
  payload?: unknown;
  created_at_ms?: number;
}

export function kick(n: number, extra: Record<string, unknown> = {}): Required<RoomFactInput> {
  return {
    event_id: `rev_kick_${n}`,
    event_type: 'RoomUserKicked',
    app_code: 'lalu',
    room_id: `room_${n % 7}`,
    payload: { target_user_id: String(30000 + n), operator_user_id: '10001', reason: 'spam', ...extra },
    created_at_ms: 1800000000000 + n,
  };
}

export function roomEvent(n: number, eventType: string): Required<RoomFactInput> {
  return { ...kick(n), event_id: `rev_${eventType}_${n}`, event_type: eventType, payload: { anything: n } };
}

/** A rocket reward to one user (50000 + n) in room_9. */
export function rocket(
  n: number,
  payload: Record<string, unknown> = { reward_user_id: String(50000 + n), rocket_level: 3, rocket_id: `r${n}`, reward_items: [{ resource_id: 301, count: 1 }] },
): Required<RoomFactInput> {
  return { event_id: `rev_rocket_${n}`, event_type: 'RoomRocketRewardGranted', app_code: 'lalu', room_id: 'room_9', payload, created_at_ms: 1800000000000 + n };
}

/** The MQ body room-service publishes: the same fact as the outbox row. */
export function mqBody(fact: RoomFactInput): string {
  return JSON.stringify(fact);
}

export async function insertRoomRows(db: Pool, database: string, facts: readonly RoomFactInput[]): Promise<void> {
  if (facts.length === 0) return;
  await db.query(
    `INSERT INTO \`${database}\`.room_outbox (app_code, event_id, event_type, room_id, payload, created_at_ms) VALUES ${facts.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}`,
    facts.flatMap((f) => [
      f.app_code ?? 'lalu',
      f.event_id,
      f.event_type ?? 'RoomUserKicked',
      f.room_id ?? 'room_1',
      typeof f.payload === 'string' ? f.payload : JSON.stringify(f.payload ?? {}),
      f.created_at_ms ?? Date.now(),
    ]),
  );
}
