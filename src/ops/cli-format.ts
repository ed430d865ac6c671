import { RoleConfigError } from '../app/role.ts';
import type { presentFact } from '../ledger/present-fact.ts';
import { showControls } from '../platform/text.ts';

type Fact = ReturnType<typeof presentFact>;

/**
 * Facts as an operator reads them: a line per fact, an indented line per channel with the reason in words. Each line
 * shows controls as [U+XXXX]: ids, types and reasons are owner-written or provider-written text.
 */
export function factsAsText(facts: readonly Fact[], zone: string, more: boolean): string {
  if (facts.length === 0) return `no facts match (times in ${zone})`;
  const lines: string[] = [];
  for (const f of facts) {
    lines.push(showControls(`${f.at}  ${f.event_type} · ${f.notice_kind}  user ${f.user_id}  ${f.event_id}`));
    const width = Math.max(...f.channels.map((c) => c.channel.length));
    for (const c of f.channels) {
      lines.push(showControls(`  ${c.channel.padEnd(width)}  ${c.status.padEnd(21)}  ${c.reason}`));
      if (c.what_to_do) lines.push(showControls(`  ${''.padEnd(width)}  ${''.padEnd(21)}  what to do: ${c.what_to_do}`));
    }
  }
  lines.push(
    '',
    `${facts.length} fact${facts.length === 1 ? '' : 's'}, newest first, times in ${zone}${more ? '; more are older (raise --limit or narrow --since)' : ''}`,
  );
  return lines.join('\n');
}

/** `--output table|json`: a wrong value is named, not guessed. */
export function outputFormat(value: string): 'table' | 'json' {
  if (value === 'table' || value === 'json') return value;
  throw new RoleConfigError(`--output must be table or json, got "${value}"`);
}
