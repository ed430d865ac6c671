import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { describeError } from '../../platform/errors.ts';
import type { RestFailure, RestOk } from '../../tencent-im/rest.ts';
import type { InboxOwner } from './store.ts';
import { userTag } from './live.ts';

/** One Tencent app's side of the sync: its REST call, the account its notices come from, and its pacer. */
export interface ReadSyncApp {
  call(path: string, body: string): Promise<RestOk | RestFailure>;
  /** The C2C conversation to mark read is the one with this account (notices are sent as the app admin). */
  peerAccount: string;
  pacer: { acquire(maxWaitMs?: number): Promise<{ sent: true } | { sent: false; retryInMs: number }> };
  close?(): void;
}

/**
 * When a user reads inbox items, the C2C conversation their notices came through is marked read in Tencent IM too
 * (`admin_set_msg_read`), so the IM badge agrees with the inbox. Best effort and off the gRPC path: at most one call
 * per user per window across API processes (a Redis NX key), made at the window's end so it covers every read in it,
 * paced under the app's quota, retried a few times; a failure is logged, never returned to the caller.
 */
export class ImReadSync {
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;
  readonly stats = { scheduled: 0, synced: 0, failed: 0 };

  constructor(
    private readonly deps: {
      redis: Redis;
      prefix: string;
      apps: ReadonlyMap<string, ReadSyncApp>;
      windowMs: number;
      retryDelaysMs: readonly number[];
      logger: Logger;
    },
  ) {}

  /** The owner read something: sync their IM conversation at the end of this window, unless a call is already due. */
  readBy(owner: InboxOwner): void {
    void this.schedule(owner).catch((err) => this.deps.logger.warn({ err: describeError(err) }, 'IM read sync not scheduled (Redis); skipped'));
  }

  private async schedule(owner: InboxOwner): Promise<void> {
    const app = this.deps.apps.get(owner.appCode);
    if (!app || this.closed) return;
    const first = await this.deps.redis.set(`${this.deps.prefix}:im-read:${userTag(owner)}`, '1', 'PX', this.deps.windowMs, 'NX');
    if (first !== 'OK') return;
    this.stats.scheduled++;
    this.later(this.deps.windowMs, () => this.sync(owner, app, 0));
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
      const slot = await app.pacer.acquire(5000);
      const answer = slot.sent
        ? await app.call('v4/openim/admin_set_msg_read', JSON.stringify({ Report_Account: owner.userId, Peer_Account: app.peerAccount }))
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
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const app of this.deps.apps.values()) app.close?.();
  }
}
