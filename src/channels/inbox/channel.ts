import DataLoader from 'dataloader';
import type { InboxConfig } from './config.ts';
import { isDataError } from '../../intake/fact-validation.ts';
import type { LedgerRow } from '../../ledger/types.ts';
import { CHANNEL_INBOX } from '../../ledger/types.ts';
import { groupCommit } from '../../platform/group-commit.ts';
import { clipText } from '../../platform/text.ts';
import type { ChannelContext } from '../types.ts';
import type { ChannelOutcome, DeliveryChannel } from '../types.ts';
import { factHash, InboxStore, type NewInboxItem } from './store.ts';
import { InboxSweeper } from './sweeper.ts';
import { publishInboxChanges } from './live.ts';
import { createReadSync } from './read-sync-setup.ts';
import { describeError } from '../../platform/errors.ts';

/** When an item of this kind expires (retention per kind, `default` for the rest; 0 = only the cap removes it). */
export function expiryFor(retention: InboxConfig['retention'], kind: string, createdAtMs: number): number | null {
  const keepMs = retention[kind] ?? retention.default ?? 0;
  return keepMs > 0 ? createdAtMs + keepMs : null;
}

/**
 * The site inbox as a delivery channel: "sending" is an idempotent insert of the user's item. Concurrent deliveries
 * are coalesced into one INSERT (group commit); the fact's hash is unique, so a resend after a crash is a no-op
 * that returns the same item id. No pacing: the only limit is MySQL.
 */
export function inboxChannel(ctx: ChannelContext, store = new InboxStore(ctx.pool), now: () => number = Date.now): DeliveryChannel {
  const config = ctx.config.inbox;
  // Users who read inbox items get their IM conversation marked read from here (the API only notes who read).
  const readSync = config.im_read_sync.enabled && ctx.config.tencent_im.enabled ? createReadSync(ctx.config, ctx.redis, ctx.logger, store) : null;
  readSync?.start();
  const sweeper = new InboxSweeper(store, config, ctx.logger, ctx.metrics);
  const slot = groupCommit();
  const loader = new DataLoader<NewInboxItem, ChannelOutcome, string>((items) => slot.track(insertBatch(items)), {
    cache: false,
    maxBatchSize: 500,
    batchScheduleFn: slot.schedule,
  });

  /** Committed items reach the users' open WatchInbox streams, in whichever API process holds them (best effort). */
  function announce(items: readonly NewInboxItem[], ids: ReadonlyMap<string, string>): void {
    if (!config.live_events) return;
    const changes = items.flatMap((item) => {
      const id = ids.get(factHash(item.fact).toString('hex'));
      return id ? [{ owner: { appCode: item.appCode, userId: item.userId }, change: { type: 'added' as const, id } }] : [];
    });
    publishInboxChanges(ctx.redis, ctx.config.redis.prefix, changes).catch((err) =>
      ctx.logger.warn({ err: describeError(err) }, 'inbox live events not published; open streams catch up on the next change'),
    );
  }

  async function insertBatch(items: readonly NewInboxItem[]): Promise<ChannelOutcome[]> {
    const startedMs = performance.now();
    try {
      const ids = await store.insert(items);
      const latencyMs = performance.now() - startedMs;
      announce(items, ids);
      return items.map((item) => outcomeOf(ids.get(factHash(item.fact).toString('hex')), latencyMs));
    } catch (err) {
      if (!isDataError(err) || items.length === 1) throw err;
    }
    // One value the server refused fails only its own item: row by row, and a row still refused is permanent.
    return Promise.all(
      items.map(async (item) => {
        const rowStartedMs = performance.now();
        try {
          const ids = await store.insert([item]);
          announce([item], ids);
          return outcomeOf(ids.get(factHash(item.fact).toString('hex')), performance.now() - rowStartedMs);
        } catch (err) {
          if (!isDataError(err)) throw err;
          return {
            kind: 'permanent',
            code: 'INBOX_REFUSED',
            message: `the inbox refused this item: ${clipText((err as Error).message, 300)}`,
            latencyMs: performance.now() - rowStartedMs,
          } as const;
        }
      }),
    );
  }

  return {
    name: CHANNEL_INBOX,
    async withdraw(row: LedgerRow) {
      const removed = await store.deleteFact({ sourceName: row.sourceName, appCode: row.appCode, sourceEventId: row.sourceEventId });
      // The user's open streams hear the lower count at once.
      if (removed && config.live_events)
        await publishInboxChanges(ctx.redis, ctx.config.redis.prefix, [
          { owner: { appCode: row.appCode, userId: row.userId }, change: { type: 'changed' } },
        ]).catch(() => undefined);
      return { kind: 'withdrawn', note: removed ? 'inbox item removed' : 'inbox item already gone' } as const;
    },
    async send(row: LedgerRow): Promise<ChannelOutcome> {
      const createdAtMs = now();
      const item: NewInboxItem = {
        appCode: row.appCode,
        userId: row.userId,
        fact: { sourceName: row.sourceName, appCode: row.appCode, sourceEventId: row.sourceEventId },
        noticeKind: row.noticeKind,
        eventType: row.eventType,
        payload: row.payload ?? '',
        createdAtMs,
        expireAtMs: expiryFor(config.retention, row.noticeKind, createdAtMs),
      };
      try {
        const outcome = await loader.load(item);
        if (outcome.kind === 'delivered') sweeper.touched(item);
        return outcome;
      } catch (err) {
        if (isDataError(err))
          return { kind: 'permanent', code: 'INBOX_REFUSED', message: `the inbox refused this item: ${clipText((err as Error).message, 300)}`, latencyMs: 0 };
        throw err; // MySQL away: the delivery core lets the job wait without spending an attempt
      }
    },
    maintain: (nowMs) => sweeper.sweep(nowMs),
    maintainEveryMs: config.sweep_interval,
    async close() {
      readSync?.close();
    },
  };
}

function outcomeOf(id: string | undefined, latencyMs: number): ChannelOutcome {
  // The insert succeeded, so the row exists unless a sweep removed it in between: that is a delivery too.
  return { kind: 'delivered', ref: id === undefined ? 'inbox:swept' : `inbox:${id}`, latencyMs };
}
