import DataLoader from 'dataloader';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { CHANNEL_INBOX, type LedgerKey } from '../../ledger/types.ts';
import { groupCommit } from '../../platform/group-commit.ts';
import { factHash } from './store.ts';
import type { ItemReadState, ReadStates } from '../types.ts';

/** Where a fact's inbox item stands: unread, read (or archived), gone (delivered, then deleted), or not there yet. */
export type InboxItemState = ItemReadState;

type Fact = Omit<LedgerKey, 'channel'>;

/** Read state of facts' inbox items for other channels' decisions (push only if unread); one statement per batch. */
export class InboxReadState implements ReadStates {
  private readonly batch = groupCommit();
  private readonly loader: DataLoader<Fact, InboxItemState, string>;

  constructor(private readonly pool: Pool) {
    this.loader = new DataLoader((facts) => this.load(facts), {
      cache: false,
      cacheKeyFn: (f) => factHash(f).toString('hex'),
      batchScheduleFn: this.batch.schedule,
    });
  }

  stateOf(fact: Fact): Promise<InboxItemState> {
    return this.loader.load(fact);
  }

  private async load(facts: readonly Fact[]): Promise<InboxItemState[]> {
    const hashes = facts.map((f) => factHash(f));
    const [items] = await this.batch.track(
      this.pool.query<RowDataPacket[]>(
        `SELECT fact_hash, is_read, is_archived FROM notice_inbox_items WHERE fact_hash IN (${hashes.map(() => '?').join(', ')})`,
        hashes,
      ),
    );
    const found = new Map<string, boolean>();
    const note = (rows: RowDataPacket[]) => {
      for (const r of rows) found.set((r.fact_hash as Buffer).toString('hex'), Number(r.is_read) === 1 || Number(r.is_archived) === 1);
    };
    note(items);
    const missing = facts.filter((f) => !found.has(factHash(f).toString('hex')));
    // No item: deleted by the user after it was delivered, or not written yet (its inbox row is still on its way).
    const delivered = new Set<string>();
    if (missing.length > 0) {
      const [rows] = await this.pool.query<RowDataPacket[]>(
        `SELECT source_name, app_code, source_event_id FROM notice_delivery_events
          WHERE channel = ? AND status = 'delivered' AND (source_name, app_code, source_event_id) IN (${missing.map(() => '(?, ?, ?)').join(', ')})`,
        [CHANNEL_INBOX, ...missing.flatMap((f) => [f.sourceName, f.appCode, f.sourceEventId])],
      );
      for (const r of rows)
        delivered.add(factHash({ sourceName: String(r.source_name), appCode: String(r.app_code), sourceEventId: String(r.source_event_id) }).toString('hex'));
      // An item written between the two reads above looks deleted (missing, yet delivered by the second read): look
      // for those once more, so a push is never skipped as "deleted" for an item the user has not even seen.
      const gone = [...delivered].map((hex) => Buffer.from(hex, 'hex'));
      if (gone.length > 0) {
        const [late] = await this.pool.query<RowDataPacket[]>(
          `SELECT fact_hash, is_read, is_archived FROM notice_inbox_items WHERE fact_hash IN (${gone.map(() => '?').join(', ')})`,
          gone,
        );
        note(late);
      }
    }
    return facts.map((f) => {
      const hash = factHash(f).toString('hex');
      const read = found.get(hash);
      if (read !== undefined) return read ? 'read' : 'unread';
      return delivered.has(hash) ? 'gone' : 'not_yet';
    });
  }
}
