import { isLosslessNumber, parse, stringify, type LosslessNumber } from 'lossless-json';
import { z } from 'zod';

/**
 * Outbox payloads carry int64 amounts; JSON.parse would round anything past 2^53. Numbers stay as their exact
 * source text (LosslessNumber) from the outbox row to the client payload.
 *
 * Most payloads hold only short integers, which JSON.parse reads exactly and JSON.stringify writes back as the same
 * text: those take the native parser (lossless-json's was ~20 % of ingest's allocations and ~10 % of its CPU). Anything
 * else — a fraction, an exponent, 16 digits or more, `-0`, a duplicate key (lossless-json refuses differing ones),
 * text JSON.parse refuses — goes through lossless-json as before, so the result and its errors are the same.
 */
export function parsePayloadJson(text: string): unknown {
  const keys = plainJsonKeyCount(text);
  if (keys >= 0) {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return parse(text);
    }
    if (countKeys(value) === keys) return value;
  }
  return parse(text);
}

export function stringifyPayload(value: unknown): string {
  const text = holdsLosslessNumber(value) ? stringify(value) : JSON.stringify(value);
  if (text === undefined) throw new Error('payload cannot be serialised');
  return text;
}

const isDigit = (c: number) => c >= 48 && c <= 57;
const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;

/**
 * The number of object keys in JSON text whose every number is an integer of at most 15 digits (exact as a double,
 * written back unchanged) and not `-0`; -1 otherwise. A scan of char codes outside strings; it allocates nothing.
 */
export function plainJsonKeyCount(text: string): number {
  let keys = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 92) i += 2;
        else if (d === 34) break;
        else i++;
      }
      let j = i + 1;
      while (j < n && isSpace(text.charCodeAt(j))) j++;
      if (text.charCodeAt(j) === 58) keys++;
    } else if (c === 45 || isDigit(c)) {
      const start = c === 45 ? i + 1 : i;
      let j = start;
      while (j < n && isDigit(text.charCodeAt(j))) j++;
      const digits = j - start;
      const next = text.charCodeAt(j);
      if (digits === 0 || digits > 15 || next === 46 || next === 101 || next === 69) return -1;
      if (c === 45 && digits === 1 && text.charCodeAt(start) === 48) return -1;
      i = j - 1;
    }
  }
  return keys;
}

/** Own keys of every object in a parsed JSON value: fewer than the text's keys means a duplicate key was dropped. */
function countKeys(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  let n = 0;
  if (Array.isArray(value)) {
    for (const item of value) n += countKeys(item);
    return n;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    n += 1 + countKeys((value as Record<string, unknown>)[key]);
  }
  return n;
}

function holdsLosslessNumber(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (isLosslessNumber(value)) return true;
  if (Array.isArray(value)) return value.some(holdsLosslessNumber);
  for (const key in value) if (Object.hasOwn(value, key) && holdsLosslessNumber((value as Record<string, unknown>)[key])) return true;
  return false;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** An integer that fits int64, kept exact. Plain JS numbers (built in code, not parsed) are accepted too. */
export const int64 = z.custom<LosslessNumber | number>((value) => {
  if (typeof value === 'number') return Number.isSafeInteger(value);
  if (!isLosslessNumber(value) || !/^-?\d+$/.test(value.value)) return false;
  const big = BigInt(value.value);
  return big >= INT64_MIN && big <= INT64_MAX;
}, 'expected an integer within int64');

export function describeZodError(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.length ? issue.path.join('.') : 'payload'}: ${issue.message}`).join('; ');
}

/**
 * The outbox row's payload as text, or why there is none to parse: the reader leaves out payloads over the raw
 * limit and says their size (`payload_bytes`).
 */
export function rawPayloadText(row: Record<string, unknown>, maxBytes: number): { text: string } | { problem: string } {
  const bytes = row.payload_bytes === null || row.payload_bytes === undefined ? null : Number(row.payload_bytes);
  if (bytes !== null && bytes > maxBytes)
    return {
      problem: `payload is ${bytes} bytes; intake reads at most ${maxBytes} (no channel takes a notice that large: IM 12 KB, push 4 KB), so it was not read`,
    };
  if (row.payload === null || row.payload === undefined) return { problem: 'payload is missing' };
  return { text: typeof row.payload === 'string' ? row.payload : String(row.payload) };
}
