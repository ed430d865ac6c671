import type { LedgerKey } from './types.ts';

/** Keys sharing source, app and channel: one batch statement each, whose rows differ only in source_event_id. */
export interface KeyGroup<T> {
  sourceName: string;
  items: T[];
  /** `source_name = ? AND app_code = ? AND channel = ? AND source_event_id IN (…)` and its parameters. */
  where: { sql: string; params: string[] };
}

/**
 * Splits a batch by (source, app, channel) so each statement filters the primary key's leading columns by equality
 * and only source_event_id by IN. A row-constructor IN over all four columns is much dearer for the optimizer:
 * measured on MariaDB 10.11 at 64 keys per statement, 4–7× the server CPU per row (it weighs range plans over
 * every secondary index for each tuple), and the cost per row grows with the batch.
 */
export function groupKeys<T>(items: readonly T[], keyOf: (item: T) => LedgerKey): Array<KeyGroup<T>> {
  const groups = new Map<string, { first: LedgerKey; items: T[] }>();
  for (const item of items) {
    const key = keyOf(item);
    const prefix = `${key.sourceName}\u0000${key.appCode}\u0000${key.channel}`;
    const group = groups.get(prefix);
    if (group) group.items.push(item);
    else groups.set(prefix, { first: key, items: [item] });
  }
  return [...groups.values()].map(({ first, items: members }) => ({
    sourceName: first.sourceName,
    items: members,
    where: {
      sql: `source_name = ? AND app_code = ? AND channel = ? AND source_event_id IN (${members.map(() => '?').join(', ')})`,
      params: [first.sourceName, first.appCode, first.channel, ...members.map((m) => keyOf(m).sourceEventId)],
    },
  }));
}
