import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { DeliveryChannel } from '../../channels/types.ts';
import { formatKey, type LedgerKey } from '../../ledger/types.ts';
import { loadLuaScript, runLuaScript } from '../../platform/lua-scripts.ts';

const LUA_DIR = new URL('../lua/', import.meta.url);
const ADMIT = loadLuaScript(LUA_DIR, 'admitCapped-1');
const SEED = loadLuaScript(LUA_DIR, 'seedCapped-1');

export interface CapWindow {
  max: number;
  perMs: number;
}

/**
 * The ledger's recent sends of a user on the channel (delivered, unconfirmed or being sent), for a lost window; a row
 * still being worked and not yet marked as sent has the id `maybe:<its id>` (see admitCapped-1.lua).
 */
export type RecentSends = (appCode: string, userId: string, sinceMs: number) => Promise<Array<{ id: string; atMs: number }>>;

/** The id a send is counted under: the ledger key, so a retry of the same row counts once. */
export function capSendId(row: LedgerKey): string {
  return createHash('sha256').update(formatKey(row)).digest('base64url').slice(0, 22);
}

/**
 * Around a channel (the push): at most `max` sends per user in each window, shared by every deliver process through
 * Redis; an over-cap send ends `suppressed`, reason frequency_cap, and the notice still reaches its other channels.
 * Mandatory kinds pass uncounted. If Redis lost a user's window, it is counted again from the ledger first (too many
 * rather than too few).
 */
export function frequencyCap(
  channel: DeliveryChannel,
  deps: {
    redis: Redis;
    /** The key prefix of an app's windows (its own hash tag: src/config/redis-keyspace.ts). */
    prefixOf(appCode: string): string;
    windows: readonly CapWindow[];
    exempt(noticeKind: string): boolean;
    recent: RecentSends;
    now?: () => number;
  },
): DeliveryChannel {
  if (deps.windows.length === 0) return channel;
  const now = deps.now ?? Date.now;
  const longest = Math.max(...deps.windows.map((w) => w.perMs));
  const limits = deps.windows.flatMap((w) => [String(w.max), String(w.perMs)]);
  return {
    ...channel,
    async send(row, ctx) {
      if (deps.exempt(row.noticeKind)) return channel.send(row, ctx);
      const user = `${row.appCode}:${createHash('sha256').update(row.userId).digest('base64url').slice(0, 16)}`;
      const key = `${deps.prefixOf(row.appCode)}:cap:${channel.name}:${user}`;
      const sendId = capSendId(row);
      const admit = async () => Number(await runLuaScript(deps.redis, ADMIT, [key], [String(now()), sendId, String(longest), ...limits]));
      let admitted = await admit();
      if (admitted === -1) {
        const sends = await deps.recent(row.appCode, row.userId, now() - longest);
        await runLuaScript(deps.redis, SEED, [key], [String(longest), ...sends.flatMap((s) => [s.id, String(s.atMs)])]);
        admitted = await admit();
      }
      // A new admission is checked against the sends the ledger has recorded: a Redis rolled back to an older
      // snapshot keeps its "seeded" mark but forgets later sends. At most `max` such reads per user and window.
      if (admitted === 1 && (await ledgerFull(deps, longest, row, sendId, now()))) {
        await deps.redis.zrem(key, sendId);
        admitted = 0;
      }
      if (admitted >= 1) return channel.send(row, ctx);
      const caps = deps.windows.map((w) => `${w.max} per ${Math.round(w.perMs / 60_000)} min`).join(', ');
      return { kind: 'suppressed', reason: 'frequency_cap', detail: `over the push cap (${caps}); the notice went to its other channels` };
    },
  };
}

/** Whether the ledger's recorded sends (not rows still being worked, not this one) already fill a window. */
async function ledgerFull(
  deps: { windows: readonly CapWindow[]; recent: RecentSends },
  longest: number,
  row: LedgerKey & { userId: string },
  sendId: string,
  nowMs: number,
) {
  const sent = (await deps.recent(row.appCode, row.userId, nowMs - longest)).filter((s) => !s.id.startsWith('maybe:') && s.id !== sendId);
  return deps.windows.some((w) => sent.filter((s) => s.atMs >= nowMs - w.perMs).length >= w.max);
}
