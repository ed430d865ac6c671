import type { QuietHours } from '../quiet-hours/window.ts';
import type { Pool } from 'mysql2/promise';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { z } from 'zod';
import type { NoticeConfig } from '../config/schema.ts';
import type { Role } from '../app/role.ts';
import type { FakeImServer } from '../fake-im/server.ts';
import type { LedgerKey, LedgerRow } from '../ledger/types.ts';
import type { NoticeMetrics } from '../observability/metrics.ts';

/**
 * What one send over a channel came to. Expected outcomes are values; only programming errors throw, and an
 * infrastructure error (MySQL, Redis) thrown from a send makes the job wait without spending an attempt.
 */
export type ChannelOutcome =
  | { kind: 'delivered' /** The provider's reference (Tencent MsgKey, inbox item id), kept in the ledger. */; ref: string; latencyMs: number }
  /** The request may have reached the provider and the channel's policy is not to resend it (a resend may show twice). */
  | { kind: 'unconfirmed'; ref: string; code: string; message: string; latencyMs: number }
  | { kind: 'retry'; code: string; message: string; latencyMs: number }
  | { kind: 'permanent'; code: string; message: string; latencyMs: number }
  /** The provider's app-wide limit answered: give the claim back unspent; the channel slows every sender. */
  | { kind: 'rate_limited'; code: string; message: string; latencyMs: number }
  /** Not sent at all: a newer version of the same notice is sent or on its way. */
  | { kind: 'superseded'; newerEventId: string }
  /** Not sent at all, by the user's choice: their preference, or the push cap. */
  | { kind: 'suppressed'; reason: 'preference' | 'frequency_cap' | 'quiet_hours'; detail: string }
  /** Not sent at all: older than its kind's expire_after when its turn came. */
  | { kind: 'expired'; ageMs: number; limitMs: number }
  /** Not sent at all: no send slot within the ledger lock; claim again at `retryAtMs`, unspent. */
  | { kind: 'not_now'; code: string; message: string; retryAtMs: number }
  /** Not its moment (the user's quiet hours): the row waits in the ledger until `untilMs`, then is decided again. */
  | { kind: 'deferred'; reason: 'quiet_hours' | 'escalate' | 'digest'; detail: string; untilMs: number }
  /** Not sent on its own: counted in a digest whose leader sends one summary. */
  | { kind: 'digested'; detail: string }
  /** Not sent at all: the push waited (escalate_after) and the inbox item was read, archived or deleted first. */
  | { kind: 'skipped_read'; detail: string };

/** What taking back a sent notice came to (a revocation): withdrawn, or why not (retry later, or never). */
export type WithdrawResult = { kind: 'withdrawn'; note: string } | { kind: 'retry' | 'permanent'; code: string; message: string };

/** What one user decided that delivery must respect: the kinds they turned off per channel, and their quiet hours. */
export interface UserSettings {
  /** `choiceKey(kind, channel)` of every choice the user turned off. */
  off: ReadonlySet<string>;
  quietHours: QuietHours | null;
}

export interface SendContext {
  /** When the claim's ledger lock ends (null: no lock); a send must end before it. */
  lockUntilMs: number | null;
  /** When the notice stops being worth showing (deliver.expire_after), if its kind has a limit: a provider's offline storage must not outlive it. */
  expiresAtMs?: number | null;
  /** A digest summary: how many notices this one send stands for (the newest is the row's payload). */
  digestCount?: number;
  /** The user turned this kind's phone push off: a message must not make the phone buzz either (C2C: PushFlag 1). */
  silencePush?: boolean;
  /** The user's choices and quiet hours, when an outer wrapper already read them for this row (one read per row). */
  settings?: UserSettings;
}

/**
 * A delivery channel: Tencent IM C2C, the site inbox, phone push. It owns how a claimed ledger row is sent
 * (pacing, provider dedup, what is obsolete); the delivery core owns claim, record and retry around it.
 */
export interface DeliveryChannel {
  readonly name: string;
  send(row: LedgerRow, ctx: SendContext): Promise<ChannelOutcome>;
  /** After a rate_limited answer for this row: slow every sender of its app down; returns the new pace (1 = full rate). */
  onRateLimited?(row: LedgerRow): Promise<number>;
  /** Periodic upkeep owned by the channel (retention, caps); run by one process at a time. */
  maintain?(nowMs: number): Promise<Record<string, number>>;
  /** Takes back a notice this channel delivered (a revocation); absent: what it sent cannot be taken back (a push). */
  withdraw?(row: LedgerRow): Promise<WithdrawResult>;
  /** How often maintain runs. */
  maintainEveryMs?: number;
  close?(): Promise<void> | void;
}

/** What a channel may write to the ledger itself: only the mark that a provider call is about to start. */
export interface ChannelLedger {
  /**
   * Marks claimed rows (held by their claimer) with `ref` before a call that a crash could leave unknown, so the
   * next claim applies the channel's policy instead of sending blind. Returns the rows it marked (a row whose lock
   * was taken over meanwhile is not).
   */
  markAttemptStarted(rows: readonly LedgerRow[], ref: string): Promise<LedgerRow[]>;
  /** A user's recent sends on a channel (for a per-user cap whose Redis window was lost). */
  recentSends(
    appCode: string,
    userId: string,
    channel: string,
    sinceMs: number,
  ): Promise<Array<LedgerKey & { atMs: number; inFlight: boolean; noticeKind: string }>>;
}

/** Where a fact's item in a readable channel (the inbox) stands: unread, read (or archived), gone (deleted), or not there yet. */
export type ItemReadState = 'unread' | 'read' | 'gone' | 'not_yet';

/** How other channels' decisions ask whether a fact's item was read (a push escalated only if unread). */
export interface ReadStates {
  stateOf(fact: Omit<LedgerKey, 'channel'>): Promise<ItemReadState>;
}

/** Which channels a fact of this type and kind goes to (the routing decision, made outside any channel). */
export interface ChannelRoutes {
  (eventType: string, noticeKind: string): readonly string[];
  /**
   * Where a fact that must be recorded but goes to no channel (a malformed one) is filed: the deployment's first
   * routed channel. The failure is the fact's, not that channel's.
   */
  readonly fallback?: string;
}

/** What a channel is built from in a deliver process; everything it needs to know of others is passed in here. */
export interface ChannelContext {
  config: NoticeConfig;
  pool: Pool;
  redis: Redis;
  /** The one ledger write a channel makes itself (marking rows before an ambiguous call). */
  ledger: ChannelLedger;
  /** Where facts are routed (channels/routing.ts), so a channel can tell whether another also carries a notice. */
  routes: ChannelRoutes;
  logger: Logger;
  metrics?: NoticeMetrics;
}

/** A process role a channel serves beyond delivery (the inbox's gRPC API), started by `run <role>` and `all`. */
export interface ChannelRoleSpec {
  name: string;
  description: string;
  /** Whether `all` runs it under this config. */
  enabled(config: NoticeConfig): boolean;
  create(config: NoticeConfig, logger: Logger, metrics?: NoticeMetrics): Promise<Role>;
}

/**
 * One delivery channel's module: everything the processes need to know of it, so a new channel is its folder and
 * one line in channels/registry.ts. `configShape` is its YAML block (zod, with defaults), composed into the config.
 */
export interface ChannelModule<Shape extends z.ZodRawShape = z.ZodRawShape> {
  /** Its name in the ledger (`channel`), metrics and queues. */
  name: string;
  /** The YAML block that configures it. */
  configKey: string;
  configShape: Shape;
  /** Its keys in each app's entry under `apps` (Tencent's credentials per app), composed into the app schema. */
  appShape?: z.ZodRawShape;
  /**
   * Moves keys of its block that an earlier release had elsewhere into their new place, on the raw config before it is
   * parsed (a copy, changed in place), saying what moved; a key set in both places is a problem.
   */
  upgradeConfig?(raw: Record<string, unknown>): { deprecated: string[]; problems: Array<{ path: string[]; message: string }> };
  /** What its queues carry, for operators (the dashboard's queue description). */
  description: string;
  /** The notice kinds it takes (`*` = every kind; empty = unused). */
  kinds(config: NoticeConfig): readonly string[];
  /** Kinds with a BullMQ queue of their own in this channel (the rest share one). */
  ownQueueKinds(config: NoticeConfig): readonly string[];
  /** Concurrent deliveries per deliver process. */
  concurrency(config: NoticeConfig): number;
  /** The longest one send can take: its job lock outlasts it. */
  longestSendMs(config: NoticeConfig): number;
  /** A channel whose opt-out also silences this channel's own phone notification (push, for C2C's OfflinePushInfo). */
  silencedBy?: string;
  /** This channel's digest of a kind (one summary per window of a user's notices), or null. */
  digestRule?(config: NoticeConfig, kind: string): { windowMs: number; firstAtOnce: boolean; byRoom: boolean } | null;
  /** How long a notice of this kind waits for its inbox item to be read before this channel sends it, or null. */
  escalateAfterMs?(config: NoticeConfig, kind: string): number | null;
  /** Whether it still takes a notice of this kind past expire_after (the inbox keeps history); default: no. */
  keepsExpired?(config: NoticeConfig, kind: string): boolean;
  /** The provider's quota in sends per second (shown beside its send rate), or null when it has none. */
  rateLimitPerSecond(config: NoticeConfig): number | null;
  /** What that quota counts: one notice per unit (C2C), or calls that carry many (push batches); charts draw only the first. */
  quotaCounts?: 'notices' | 'calls';
  /** Why this config gives the channel no sender (so routed notices would never go), or null. */
  senderProblem(config: NoticeConfig): string | null;
  /** Mistakes in its block that parsing cannot see (keys that must go together), each naming its key. */
  configProblems?(config: NoticeConfig): string[];
  create(ctx: ChannelContext): Promise<DeliveryChannel>;
  /** Roles it serves beyond delivery. */
  roles?: readonly ChannelRoleSpec[];
  /** What `config check` prints of its listeners and their guards. */
  listeners?(config: NoticeConfig): Promise<string[]>;
  /** Its provider's numeric error codes that are documented (Tencent's list): each its own metric label, the rest `other`. */
  documentedErrorCode?(code: number): boolean;
  /** A channel whose items users read (the inbox): the read states escalation asks about. */
  readStates?(pool: Pool): Promise<ReadStates>;
  /** Its conformance probe, loaded only by the conformance suite (test/channels/conformance.ts). */
  probe(): Promise<ChannelProbe>;
}

/** What the conformance suite gives a probe: the real providers of one trial. */
export interface ProbeWorld {
  fakeIm: FakeImServer;
  /** A pool on notice-service's own database (the inbox's store). */
  notice: Pool;
  /** A pool on the whole server (owner databases, fixtures). */
  owner: Pool;
  noticeDatabase: string;
  /** notice-service's MySQL goes away; the returned function brings it back. */
  cutMysql(): Promise<() => Promise<void>>;
}

/**
 * How the conformance suite sees what a channel did: what reached the user and how to take its provider away. A
 * channel without one fails the suite.
 */
export interface ChannelProbe {
  /** Config that gives the channel a sender. */
  config: Record<string, unknown>;
  /** A notice kind the channel takes. */
  kind: string;
  /** The recipients of every copy of the row's notice the user could see (one entry per copy). */
  seen(world: ProbeWorld, row: LedgerRow): Promise<string[]>;
  /**
   * What the next claim of a sent row whose outcome was never recorded (the sender died) comes to. Either way the
   * user sees one copy: `delivered` — the provider dedups the resend; `unconfirmed` — it would not, so the channel
   * marked the row before the call and does not resend it.
   */
  resend: 'delivered' | 'unconfirmed';
  /** The provider goes away (refused, cut or erroring); the returned function brings it back. */
  outage(world: ProbeWorld): Promise<() => Promise<void>>;
  /** A row this provider can never take (set up as the provider needs), for its permanent refusal. */
  refusedRow(world: ProbeWorld, row: LedgerRow): LedgerRow;
  /** Tear down what the probe started (an example's own server). */
  close?(): Promise<void>;
}
