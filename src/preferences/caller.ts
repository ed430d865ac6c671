import { z } from 'zod';
import { recipientProblem } from '../intake/fact-validation.ts';

/** A request the preferences API refuses, in words the caller can act on (INVALID_ARGUMENT or FAILED_PRECONDITION). */
export class PreferenceRequestError extends Error {
  constructor(
    message: string,
    readonly precondition = false,
  ) {
    super(message);
  }
}

const caller = z.object({ app_code: z.string(), user_id: z.string() }, { error: 'caller is required (app_code and user_id from the authenticated session)' });

/**
 * The authenticated caller of a user-facing call (the inbox's, the preferences'): its app and user, or what is wrong
 * with it. Every statement the call makes is about this user only.
 */
export function readCaller(raw: unknown): { appCode: string; userId: string } | { problem: string } {
  const parsed = caller.safeParse(raw);
  if (!parsed.success) return { problem: parsed.error.issues[0]!.message };
  const { app_code: appCode, user_id: userId } = parsed.data;
  if (appCode === '' || appCode.length > 32) return { problem: 'caller.app_code must be 1 to 32 characters' };
  const problem = recipientProblem(userId);
  return problem ? { problem: `caller.${problem}` } : { appCode, userId };
}

/** The caller a preference call acts for. */
export function ownerOf(raw: unknown): { appCode: string; userId: string } {
  const owner = readCaller(raw);
  if ('problem' in owner) throw new PreferenceRequestError(owner.problem);
  return owner;
}
