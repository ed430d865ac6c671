import { isLosslessNumber, parse, stringify, type LosslessNumber } from 'lossless-json';
import { z } from 'zod';

/**
 * Outbox payloads carry int64 amounts; JSON.parse would round anything past 2^53. Numbers stay as their exact
 * source text (LosslessNumber) from the outbox row to the client payload.
 */
export function parsePayloadJson(text: string): unknown {
  return parse(text);
}

export function stringifyPayload(value: unknown): string {
  const text = stringify(value);
  if (text === undefined) throw new Error('payload cannot be serialised');
  return text;
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
