import { isLosslessNumber } from 'lossless-json';
import { z } from 'zod';
import { int64 } from '../payload-json.ts';

/** User ids arrive as strings, or as integers from some producers; the IM account is always the string. */
const userId = z
  .union([z.string(), int64])
  .transform((v) => (typeof v === 'string' ? v.trim() : isLosslessNumber(v) ? v.value : String(v)))
  .pipe(z.string().min(1, 'must not be empty'));

export const roomUserKickedPayload = z.looseObject({
  target_user_id: userId,
  operator_user_id: userId,
  reason: z.string().max(1024).default(''),
  ban_until_ms: int64.nullable().optional(),
});

/** One object per reward item, passed to the client as the owner wrote it (resource ids, names, counts). */
export const rewardItems = z.array(z.record(z.string(), z.unknown())).max(100);

/** One rewarded user of a room rocket: room-service writes one fact per user (the reward itself is wallet's). */
export const roomRocketRewardGrantedPayload = z.looseObject({
  reward_user_id: userId,
  rocket_level: int64,
  reward_items: rewardItems.default([]),
  rocket_id: z.string().max(128).optional(),
});

/** The room fact as both entries carry it: the room_outbox row, or the JSON body of the MQ message. */
export const roomFactEnvelope = z.looseObject({
  // Lengths are checked in code points where the key is made (src/intake/fact-validation.ts), never cut.
  event_id: z.string().min(1),
  event_type: z.string().min(1).max(64),
  app_code: z.string().min(1),
  room_id: z.union([z.string(), int64]).transform((v) => (typeof v === 'string' ? v : isLosslessNumber(v) ? v.value : String(v))),
  payload: z.unknown(),
  created_at_ms: int64.nullable().optional(),
});

export type RoomFact = z.infer<typeof roomFactEnvelope>;
