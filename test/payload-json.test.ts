import { parse as losslessParse, stringify as losslessStringify, isLosslessNumber } from 'lossless-json';
import { describe, expect, it } from 'vitest';
import { parsePayloadJson, plainJsonKeyCount, stringifyPayload } from '../src/notices/payload-json.ts';
import { mapWalletOutboxRow } from '../src/notices/wallet/mapping.ts';
import { balanceChanged, vipActivated } from './helpers/outbox.ts';

/** What parsing then writing back gave when every payload went through lossless-json (the reference). */
function reference(text: string): { ok: true; text: string } | { ok: false; error: string } {
  try {
    return { ok: true, text: losslessStringify(losslessParse(text))! };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

function now(text: string): { ok: true; text: string } | { ok: false; error: string } {
  try {
    return { ok: true, text: stringifyPayload(parsePayloadJson(text)) };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

const CORPUS = [
  balanceChanged(1).payload,
  balanceChanged(123456).payload,
  vipActivated(7).payload,
  '{"a":1,"b":-2,"c":[1,2,{"d":0}],"e":"x\\"y:1","f":null,"g":true,"h":{}}',
  '{"amount":123456789012345}',
  '{"amount":1234567890123456}',
  '{"amount":9223372036854775807,"n":-9223372036854775808}',
  '{"x":1.0,"y":1e3,"z":1E-2,"w":-0,"v":0.1}',
  '{"a":1,"a":2}',
  '{"a":1,"a":1}',
  '{"a":{"b":1,"b":{"c":2}}}',
  '{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}}}',
  '{"s":"\\u0000\\ud800 \\n 😀","k\\"ey":"v"}',
  '{"key" : 1 , "other"\n:\t2}',
  '[1,2,3]',
  '"text"',
  '42',
  '{"a":01}',
  '{"a":1,}',
  '{"a":',
  '{"a":"unterminated}',
  '',
  'NaN',
  '{"a":-}',
];

describe('payload JSON: the native fast path writes exactly what lossless-json did', () => {
  it('gives the same text, or the same error, for every payload of the corpus', () => {
    for (const text of CORPUS) expect(now(text), text).toEqual(reference(text));
  });

  it('keeps int64 amounts exact and refuses differing duplicate keys, as lossless-json does', () => {
    expect(stringifyPayload(parsePayloadJson('{"amount":9223372036854775807}'))).toBe('{"amount":9223372036854775807}');
    expect(isLosslessNumber((parsePayloadJson('{"amount":12345678901234567}') as { amount: unknown }).amount)).toBe(true);
    expect(() => parsePayloadJson('{"a":1,"a":2}')).toThrow(/Duplicate key/);
  });

  it('takes the fast path only for short integers, counting every key outside strings', () => {
    expect(plainJsonKeyCount('{"a":1,"b":{"c":"d:e","f":[1,-2]}}')).toBe(4);
    expect(plainJsonKeyCount('{"a":"x\\":y","b":1}')).toBe(2);
    for (const text of ['{"a":1.5}', '{"a":1e2}', '{"a":-0}', '{"a":1234567890123456}']) expect(plainJsonKeyCount(text)).toBe(-1);
  });

  it('maps a wallet row to the same client payload either way', () => {
    for (const n of [1, 99, 424242]) {
      const row = { id: n, ...balanceChanged(n) };
      const mapped = mapWalletOutboxRow(row as never, 1_700_000_000_000);
      expect(mapped.kind).toBe('notice');
      const parsed = losslessParse(row.payload) as Record<string, unknown>;
      const payload = JSON.parse((mapped as { payload: string }).payload);
      expect(payload.available_after).toBe(Number(String(parsed.available_after)));
      expect((mapped as { payload: string }).payload).toContain(`"balance_version":${n}`);
    }
  });
});
