import type { Supersede } from '../ledger/types.ts';

/** A row read from an owner outbox, columns by their SQL names. */
export type OutboxRow = Record<string, unknown> & { id: number };

/** What a notice module makes of one source fact. Pure data: no I/O happens in mapping. */
export type MappedEvent =
  | { kind: 'notice'; eventType: string; userId: string; noticeKind: string; payload: string; supersede?: Supersede }
  | { kind: 'skip'; eventType: string }
  | { kind: 'malformed'; eventType: string; userId: string; noticeKind: string; reason: string };

/** The ledger identity of a source fact. */
export interface SourceIdentity {
  appCode: string;
  sourceEventId: string;
  sourceCreatedAtMs: number | null;
  /** Why this fact cannot be delivered whatever its payload says (an identifier that does not fit, a bad timestamp). */
  problem?: string;
}
