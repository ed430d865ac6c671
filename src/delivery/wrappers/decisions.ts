import type { NoticeConfig } from '../../config/schema.ts';
import type { ChannelModule, DeliveryChannel, ReadStates, UserSettings } from '../../channels/types.ts';
import type { LedgerRow } from '../../ledger/types.ts';
import type { DigestStore } from '../../digests/store.ts';
import { escalateIfUnread } from './escalate-if-unread.ts';
import { expireStale } from './expire-stale.ts';
import { gatherDigest, roomOf } from './gather-digest.ts';
import { respectPreferences } from './respect-preferences.ts';
import { respectQuietHours } from './respect-quiet-hours.ts';
import { skipSuperseded } from './skip-superseded.ts';

/** What the decisions around one channel are built from: its module, the config, and the readers a deliver process shares. */
export interface DecisionContext {
  config: NoticeConfig;
  module: ChannelModule;
  /** A claim batch's preferences and quiet hours, one statement for every channel. */
  settingsOf(appCode: string, userId: string): Promise<UserSettings>;
  /** The read states of the channel users read (the inbox), for escalation. */
  readStates: ReadStates;
  digests: DigestStore;
  newerVersion(row: LedgerRow): Promise<string | null>;
}

/** One decision around a send: finishes a row unsent with its own status (spending no quota), or passes it inward. */
export interface Decision {
  name: string;
  wrap(inner: DeliveryChannel, ctx: DecisionContext): DeliveryChannel;
}

const mandatory = (config: NoticeConfig, kind: string) => config.preferences.mandatory_kinds.includes(kind);

/**
 * The decisions around every channel's send, outermost first (the shape of a middleware list): a row is expired before
 * anyone asks the user, the user's choice comes before their quiet hours, a superseded row is dropped before it is
 * counted in a digest, and escalation waits innermost, right before the send. A decision a channel does not ask for
 * (digests, escalation) passes the row through.
 */
export const DECISIONS: readonly Decision[] = [
  {
    name: 'expire-stale',
    wrap: (inner, { config, module }) =>
      expireStale(inner, {
        limitMs: (kind) => config.deliver.expire_after[kind] ?? null,
        keeps: (kind) => module.keepsExpired?.(config, kind) ?? false,
      }),
  },
  {
    name: 'respect-preferences',
    wrap: (inner, { config, module, settingsOf }) =>
      respectPreferences(inner, {
        mandatory: (kind) => !config.preferences.enabled || mandatory(config, kind),
        settingsOf,
        silencedBy: module.silencedBy,
      }),
  },
  {
    name: 'respect-quiet-hours',
    wrap: (inner, { config, module, settingsOf }) =>
      respectQuietHours(inner, {
        policy: config.quiet_hours.enabled ? (config.quiet_hours.policy[module.name] ?? null) : null,
        silenceable: config.quiet_hours.enabled && module.silencedBy !== undefined,
        mandatory: (kind) => mandatory(config, kind),
        hoursOf: async (appCode, userId) => (await settingsOf(appCode, userId)).quietHours,
      }),
  },
  {
    name: 'skip-superseded',
    wrap: (inner, { config, newerVersion }) =>
      skipSuperseded(inner, { skips: (eventType) => config.deliver.skip_superseded[eventType] === true, newerVersion }),
  },
  {
    name: 'gather-digest',
    wrap: (inner, { config, module, digests }) => {
      const digestRule = module.digestRule;
      if (!digestRule) return inner;
      return gatherDigest(inner, {
        ruleFor: (kind) => {
          const rule = digestRule(config, kind);
          return rule && { ...rule, keyOf: (payload) => (rule.byRoom ? roomOf(payload) : '') };
        },
        step: (row, key, rule, nowMs) => digests.step(row, key, rule, nowMs),
      });
    },
  },
  {
    name: 'escalate-if-unread',
    wrap: (inner, { config, module, readStates }) => {
      const escalateAfterMs = module.escalateAfterMs;
      if (!escalateAfterMs) return inner;
      return escalateIfUnread(inner, { afterMs: (kind) => escalateAfterMs(config, kind), stateOf: (fact) => readStates.stateOf(fact) });
    },
  },
];

/** A channel's sender inside every decision, in DECISIONS' order (the first is the outermost). */
export function withDecisions(sender: DeliveryChannel, ctx: DecisionContext, decisions: readonly Decision[] = DECISIONS): DeliveryChannel {
  return decisions.reduceRight((inner, decision) => decision.wrap(inner, ctx), sender);
}
