import { stringifyPayload } from './payload-json.ts';
import type { MappedEvent } from './types.ts';
import type { Supersede } from '../ledger/types.ts';

/**
 * The last step of every notice mapping: serialise the client payload (int64 exact), or say why it cannot be. A
 * channel's own limits (IM's 12 KB message) are the channel's: an inbox-only notice is not bound by them.
 */
export function toNotice(
  payload: Record<string, unknown>,
  meta: { eventType: string; userId: string; noticeKind: string },
  supersede?: Supersede,
  language?: LanguageSource,
): MappedEvent {
  const malformed = (reason: string): MappedEvent => ({ kind: 'malformed', ...meta, reason });
  let text: string;
  try {
    text = stringifyPayload(language ? withLanguage(payload, language) : payload);
  } catch (err) {
    return malformed(`payload cannot be serialised: ${(err as Error).message.slice(0, 200)}`);
  }
  return { kind: 'notice', ...meta, payload: text, ...(supersede ? { supersede } : {}) };
}

/** Where the user's language is in the owner's payload: `offline_push.language_field` of the owner's fact. */
export interface LanguageSource {
  owner: unknown;
  field: string;
}

/** A language tag such as `zh`, `en-US`, `zh_Hans` (BCP 47-like, bounded); anything else is ignored. */
const LANGUAGE_TAG = /^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8}){0,3}$/;

/**
 * The client payload with the owner's language under the same field, so the phone notification is rendered in it
 * (offline_push templates per language). Only an own, well-formed value passes: never `constructor` or markup.
 */
export function withLanguage(payload: Record<string, unknown>, language: LanguageSource): Record<string, unknown> {
  const owner = language.owner;
  if (!owner || typeof owner !== 'object' || !Object.hasOwn(owner, language.field) || Object.hasOwn(payload, language.field)) return payload;
  const value = (owner as Record<string, unknown>)[language.field];
  return typeof value === 'string' && LANGUAGE_TAG.test(value) ? { ...payload, [language.field]: value } : payload;
}
