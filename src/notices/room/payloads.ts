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
