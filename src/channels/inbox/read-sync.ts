import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { describeError } from '../../platform/errors.ts';
import type { RestFailure, RestOk } from '../../tencent-im/rest.ts';
import type { InboxOwner } from './store.ts';

/** One Tencent app's side of the sync: its REST call, the account its notices come from, and its pacer. */
export interface ReadSyncApp {
  call(path: string, body: string): Promise<RestOk | RestFailure>;
  /** The C2C conversation to mark read is the one with this account (notices are sent as the app admin). */
  peerAccount: string;
  pacer: { acquire(maxWaitMs?: number): Promise<{ sent: true } | { sent: false; retryInMs: number }> };
  close?(): void;
}

/** The Redis sorted set of users whose IM conversation is due to be marked read, scored by when. */
export function readSyncDueKey(prefix: string): string {
  return `${prefix}:im-read-due`;
}

/**
 * The inbox API's half of the IM read sync: it only notes, in one Redis command, that a user read something. The
 * first read in a window fixes when the sync runs (NX), so one call covers every read of that window. The Tencent
 * call itself is made by deliver (ImReadSync): the process the gateway reaches holds no Tencent key.
 */
export class ReadSyncRequests {
  constructor(
    private readonly redis: Redis,
    /** An app's key prefix (its own hash tag): each app's due set lives with its other keys. */
    private readonly prefixOf: (appCode: string) => string,
    private readonly windowMs: number,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  readBy(owner: InboxOwner): void {
    this.redis
      .zadd(readSyncDueKey(this.prefixOf(owner.appCode)), 'NX', this.now() + this.windowMs, JSON.stringify([owner.appCode, owner.userId]))
      .catch((err) => this.logger.warn({ err: describeError(err) }, 'IM read sync not scheduled (Redis); skipped'));
  }
}

/** Takes the due members off the set in one step, so two deliver processes never both call for one user. */
const TAKE_DUE = `local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #due > 0 then redis.call('ZREM', KEYS[1], unpack(due)) end
return due`;

/**
 * Deliver's half: when a user reads inbox items, the C2C conversation their notices came through is marked read in
 * Tencent IM too (`admin_set_msg_read`), so the IM badge agrees with the inbox. Best effort: due users are taken off
 * the set every `pollMs`, paced under the app's quota, retried a few times; a failure is logged, and a sync lost
 * with Redis or with this process is not made good (the next read schedules another).
 */
export class ImReadSync {
  private readonly timers = new Set<NodeJS.Timeout>();
  private poller: NodeJS.Timeout | null = null;
  private closed = false;
  readonly stats = { taken: 0, synced: 0, failed: 0 };

  constructor(
    private readonly deps: {
      redis: Redis;
      /** Every prefix an app's due set may live under (src/config/redis-keyspace.ts redisPrefixes). */
      prefixes: readonly string[];
      apps: ReadonlyMap<string, ReadSyncApp>;
      pollMs: number;
      retryDelaysMs: readonly number[];
      logger: Logger;
      /** Up to when (ms) the user has read their notices (InboxStore.readBoundaryMs); null: all of them. */
      readBoundaryMs(owner: InboxOwner): Promise<number | null>;
      now?: () => number;
    },
  ) {}

  start(): void {
    const tick = () => {
      void this.takeDue()
        .catch((err) => this.deps.logger.warn({ err: describeError(err) }, 'IM read sync: due users not read (Redis); trying again'))
        .finally(() => {
          if (!this.closed) this.poller = setTimeout(tick, this.deps.pollMs);
        });
    };
    this.poller = setTimeout(tick, this.deps.pollMs);
  }

  private async takeDue(): Promise<void> {
    const now = (this.deps.now ?? Date.now)();
    const due: string[] = [];
    for (const prefix of this.deps.prefixes) due.push(...((await this.deps.redis.eval(TAKE_DUE, 1, readSyncDueKey(prefix), now, 200)) as string[]));
    for (const member of due) {
      this.stats.taken++;
      const owner = ownerOfMember(member);
      const app = owner ? this.deps.apps.get(owner.appCode) : undefined;
      if (!owner || !app) {
        this.deps.logger.warn({ member: member.slice(0, 100) }, 'IM read sync for an app this deployment has no Tencent account for; skipped');
        continue;
      }
      void this.sync(owner, app, 0);
    }
  }

  private later(ms: number, run: () => Promise<void>): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void run();
    }, ms);
    this.timers.add(timer);
  }

  private async sync(owner: InboxOwner, app: ReadSyncApp, attempt: number): Promise<void> {
    try {
      // Without MsgReadTime Tencent marks everything up to now read: one item read of twelve would zero the badge, so
      // it is left out only when nothing is unread.
      const boundary = await this.deps.readBoundaryMs(owner);
      const body = JSON.stringify({
        Report_Account: owner.userId,
        Peer_Account: app.peerAccount,
        ...(boundary === null ? {} : { MsgReadTime: msgReadTime(boundary) }),
      });
      const slot = await app.pacer.acquire(5000);
      const answer = slot.sent
        ? await app.call('v4/openim/admin_set_msg_read', body)
        : ({ kind: 'retry', code: 'SEND_SLOT_WAIT', message: 'no slot under the quota within 5 s', latencyMs: 0, mayHaveArrived: false } as const);
      if (answer.kind === 'ok') {
        this.stats.synced++;
        return;
      }
      // Marking read twice is harmless, so even an answer that may have arrived is worth retrying.
      if (answer.kind !== 'permanent' && attempt < this.deps.retryDelaysMs.length) {
        this.later(this.deps.retryDelaysMs[attempt]!, () => this.sync(owner, app, attempt + 1));
        return;
      }
      this.stats.failed++;
      this.deps.logger.warn(
        { code: answer.code, error: answer.message, app: owner.appCode },
        'IM conversation not marked read (admin_set_msg_read); the inbox is unaffected',
      );
    } catch (err) {
      this.stats.failed++;
      this.deps.logger.warn({ err: describeError(err) }, 'IM read sync failed; the inbox is unaffected');
    }
  }

  close(): void {
    this.closed = true;
    if (this.poller) clearTimeout(this.poller);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const app of this.deps.apps.values()) app.close?.();
  }
}

/**
 * Tencent's MsgReadTime (seconds, as a string): messages before it are read. Whole seconds, one back from the
 * boundary, so a message sent in the boundary's second stays unread whichever way Tencent compares.
 */
export function msgReadTime(boundaryMs: number): string {
  return String(Math.floor(boundaryMs / 1000) - 1);
}

/** A member of the due set back to its owner; anything else (a hand-written member) is null. */
function ownerOfMember(member: string): InboxOwner | null {
  try {
    const [appCode, userId] = JSON.parse(member) as unknown[];
    return typeof appCode === 'string' && typeof userId === 'string' ? { appCode, userId } : null;
  } catch {
    return null;
  }
}
