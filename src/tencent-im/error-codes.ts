/**
 * Tencent IM answers every business outcome with HTTP 200 and an `ErrorCode`; this table turns a code into what
 * the worker should do. Sources: the sendmsg and error-code pages of the IM REST API (docs/how-it-works.md and ../shared/reference/tencent-im.md).
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

/** Where a code means something else: on `v4/timpush/batch` 90057 is "DataId longer than 64 bytes", not a limit. */
const PUSH_OVERRIDES = new Map<number, ErrorClass>([[90057, 'permanent']]);

export type TencentApi = 'im' | 'push';

/** Unknown codes are permanent: retrying an answer we do not understand only burns quota. */
export function classifyErrorCode(code: number, api: TencentApi = 'im'): ErrorClass {
  return (api === 'push' ? PUSH_OVERRIDES.get(code) : undefined) ?? table.get(code) ?? 'permanent';
}

/** Every code the IM and TIMPush reference pages document (../shared/reference): a bounded set for metric labels. */
const DOCUMENTED_CODES = new Set([
  20002, 20003, 20004, 20005, 20006, 20007, 20009, 20012, 60000, 60002, 60003, 60004, 60005, 60006, 60007, 60008, 60009, 60010, 60011, 60012, 60014, 60015,
  60016, 60017, 60018, 60019, 60020, 60021, 60025, 60026, 60027, 60028, 70001, 70002, 70003, 70009, 70013, 70014, 70016, 70020, 70050, 70051, 70107, 70169,
  70398, 70399, 70402, 70500, 80001, 80002, 80003, 80004, 80005, 90001, 90002, 90003, 90005, 90006, 90007, 90008, 90009, 90010, 90011, 90012, 90018, 90020,
  90022, 90024, 90026, 90028, 90029, 90031, 90032, 90033, 90039, 90040, 90043, 90044, 90045, 90047, 90048, 90049, 90050, 90051, 90052, 90053, 90055, 90056,
  90057, 90992, 90994, 90995, 91000, 93000,
]);

export function isDocumentedCode(code: number): boolean {
  return DOCUMENTED_CODES.has(code);
}
