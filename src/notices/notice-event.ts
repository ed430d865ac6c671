import { MAX_MESSAGE_BYTES, messageBytes } from '../tencent-im/message.ts';
import { stringifyPayload } from './payload-json.ts';
import type { MappedEvent } from './types.ts';
import type { Supersede } from '../ledger/types.ts';

/**
 * The last step of every notice mapping: serialise the client payload (int64 exact) and check it fits one IM
 * message, or say why it cannot be sent.
 */
export function toNotice(payload: Record<string, unknown>, meta: { eventType: string; userId: string; noticeKind: string }, supersede?: Supersede): MappedEvent {
  const malformed = (reason: string): MappedEvent => ({ kind: 'malformed', ...meta, reason });
  let text: string;
  try {
    text = stringifyPayload(payload);
  } catch (err) {
    return malformed(`payload cannot be serialised: ${(err as Error).message.slice(0, 200)}`);
  }
  const bytes = messageBytes(text, meta.noticeKind);
  if (bytes > MAX_MESSAGE_BYTES) return malformed(`payload too large for one IM message: ${bytes} bytes > ${MAX_MESSAGE_BYTES}`);
  return { kind: 'notice', ...meta, payload: text, ...(supersede ? { supersede } : {}) };
}
