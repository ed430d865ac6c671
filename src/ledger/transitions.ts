import type { DeliveryStatus } from './types.ts';

/**
 * The allowed moves of a ledger row. Every UPDATE in the repository is conditional on its `from` side, so a
 * stale worker cannot move a row along an edge that is not here.
 *
 *   pending ──claim──▶ delivering ──▶ delivered
 *   retryable ─claim─▶ delivering ──▶ retryable (transient error / rate limited, lock released)
 *   delivering (lock expired) ─claim─▶ delivering              └──▶ failed (permanent, or retries exhausted)
 *   failed ──operator requeue──▶ pending
 */
export const TRANSITIONS: Readonly<Record<DeliveryStatus, readonly DeliveryStatus[]>> = {
  pending: ['delivering'],
  retryable: ['delivering'],
  delivering: ['delivering', 'delivered', 'retryable', 'failed'],
  delivered: [],
  failed: ['pending'],
};

export function canTransition(from: DeliveryStatus, to: DeliveryStatus): boolean {
  return TRANSITIONS[from].includes(to);
}
