/**
 * Tencent IM answers every business outcome with HTTP 200 and an `ErrorCode`; this table turns a code into what
 * the worker should do. Sources: the sendmsg and error-code pages of the IM REST API (see README).
 */
export type ErrorClass = 'retry' | 'rate_limited' | 'resign' | 'permanent';

const RATE_LIMITED = [60007, 60011, 60018, 60019, 90057];
const RESIGN = [70001, 70002, 70003, 20002, 70009];
const RETRY = [60004, 60005, 60008, 60014, 70169, 70500, 20004, 20005, 90994, 91000, 90992, 80003, 90995, 70050];

const table = new Map<number, ErrorClass>([
  ...RATE_LIMITED.map((c) => [c, 'rate_limited'] as const),
  ...RESIGN.map((c) => [c, 'resign'] as const),
  ...RETRY.map((c) => [c, 'retry'] as const),
]);

/** Unknown codes are permanent: retrying an answer we do not understand only burns quota. */
export function classifyErrorCode(code: number): ErrorClass {
  return table.get(code) ?? 'permanent';
}
