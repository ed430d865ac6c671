/**
 * One clock for operators: every page, the CLI and the audit show times in the same zone, labelled
 * (`display.time_zone`, UTC by default). Machine output (`--output json`, the APIs) keeps epoch milliseconds too.
 */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The parts of the one clock (a date, 24-hour time to the second) in a zone: for our formatter and bull-board's. */
export function clockParts(zone: string): Intl.DateTimeFormatOptions {
  return { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' };
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** `2026-12-06 17:49:05 UTC` (or `… Asia/Shanghai`): sortable, unambiguous, with its zone. */
export function formatTime(ms: number | null | undefined, zone = 'UTC'): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '';
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', clockParts(zone));
    formatters.set(zone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${zone}`;
}
