import type { LedgerKey, Supersede } from '../ledger/types.ts';

/*
 * The fact contracts every intake path shares: what an outbox row or an MQ message becomes before the ledger. They
 * sit below outbox/, rocketmq/, intake/ and notices/, which all speak them.
 */

/** A row read from an owner outbox, columns by their SQL names. */
export type OutboxRow = Record<string, unknown> & { id: number };

/** What a notice module makes of one source fact. Pure data: no I/O happens in mapping. */
export type MappedEvent =
  | { kind: 'notice'; eventType: string; userId: string; noticeKind: string; payload: string; supersede?: Supersede }
  | { kind: 'skip'; eventType: string }
  /** An owner's NoticeRevoked: take back the notices of another fact of the same source (its event id). */
  | { kind: 'revoke'; eventType: string; targetEventId: string }
  | { kind: 'malformed'; eventType: string; userId: string; noticeKind: string; reason: string };

/** The ledger identity of a source fact. */
export interface SourceIdentity {
  appCode: string;
  sourceEventId: string;
  sourceCreatedAtMs: number | null;
  /** Why this fact cannot be delivered whatever its payload says (an identifier that does not fit, a bad timestamp). */
  problem?: string;
}

/** A source fact's identity: the ledger key without its channel (the fact goes to one row per channel). */
export type FactKey = Omit<LedgerKey, 'channel'>;

/** One source fact, mapped by its notice module, with its ledger identity. */
export interface SourceFact {
  key: FactKey;
  mapped: MappedEvent;
  sourceRowId: number | null;
  sourceCreatedAtMs: number | null;
  /** Why the fact cannot be delivered whatever its mapping says (identity.problem): it is recorded as malformed. */
  problem?: string;
}

export type ParsedMessage = { kind: 'fact'; fact: SourceFact } | { kind: 'poison'; reason: string };

/**
 * An owner outbox table the poller can read. The cursor machinery knows nothing of domains: a notice module
 * supplies the table, the columns it needs, and the pure mapping of a row.
 */
export interface OutboxSource {
  /** `source_name` in the ledger and the cursor key, e.g. `wallet_outbox`. */
  readonly sourceName: string;
  readonly database: string;
  readonly table: string;
  /** Columns to select besides `id`. */
  readonly columns: readonly string[];
  identify(row: OutboxRow): SourceIdentity;
  map(row: OutboxRow, recordedAtMs: number): MappedEvent;
}
