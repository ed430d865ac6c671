import { errorGuideMarkdown } from '../ledger/error-guide.ts';

const START = '<!-- error-codes:start -->';
const END = '<!-- error-codes:end -->';

/** The runbook text with its generated error-code table replaced by the current one. */
export function withErrorGuide(runbook: string): string {
  const from = runbook.indexOf(START);
  const to = runbook.indexOf(END);
  if (from < 0 || to < from) throw new Error(`the runbook has no ${START} … ${END} section`);
  return `${runbook.slice(0, from + START.length)}\n${errorGuideMarkdown()}\n${runbook.slice(to)}`;
}
