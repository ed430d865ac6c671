import { z } from 'zod';
import { isLosslessNumber } from 'lossless-json';
import { int64 } from '../payload-json.ts';

/** One object per reward item, passed to the client as the owner wrote it (resource ids, names, counts). */
const rewardItems = z.array(z.record(z.string(), z.unknown())).max(100);

/** i18n keys are looked up by the client; params fill their placeholders. */
const i18nKey = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'letters, digits, _ . : - only');
/** Any JSON number: the payload parser keeps numbers exact (LosslessNumber), so a plain z.number() would refuse them. */
const jsonNumber = z.custom<unknown>((v) => typeof v === 'number' || isLosslessNumber(v), 'expected a number');
const i18nParams = z.record(z.string().max(64), z.union([z.string().max(512), jsonNumber, z.boolean()])).default({});

export const activityRewardGrantedPayload = z.looseObject({
  activity_id: z.string().min(1).max(128),
  reward_items: rewardItems,
  grant_id: z.string().max(128).optional(),
});

export const taskCompletedPayload = z.looseObject({
  task_id: z.string().min(1).max(128),
  activity_id: z.string().max(128).optional(),
  progress: int64,
  target: int64,
  reward_items: rewardItems.default([]),
});

export const systemNoticePayload = z.looseObject({
  title_key: i18nKey,
  body_key: i18nKey,
  params: i18nParams,
  link: z.string().max(1024).optional(),
});
