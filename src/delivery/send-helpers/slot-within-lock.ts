/** The app-wide send rate as a send sees it (SendPacer.acquire). */
export interface SlotSource {
  acquire(maxWaitMs: number, ageMs: number): Promise<{ sent: true } | { sent: false; retryInMs: number }>;
}

export interface SlotDecision {
  /** A slot was granted (the caller still checks each lock with `fits`). */
  granted: boolean;
  /** When the slot was asked for and when the answer came. */
  askedAtMs: number;
  atMs: number;
  /** When a row that does not get to send now comes back (unspent). */
  retryAtMs: number;
  /** Whether a row whose lock ends at `lockUntilMs` still has the send's time left after the slot. */
  fits(lockUntilMs: number | null): boolean;
}

/**
 * Waits for a send slot that leaves the send its time within the ledger lock: the send needs its timeout's worth
 * of lock, or half of what the lock has left when lock_ttl is shorter (a short lock was already the operator's
 * choice). Without a slot in time, the rows go back unspent and come back about when the rate has room; another
 * worker may claim them once the lock ends, so nothing is sent late. One decision for C2C's single sends and for
 * push's batched calls (pass the soonest lock of the batch).
 */
export async function slotWithinLock(
  pacer: SlotSource,
  options: { lockUntilMs: number | null; sendTimeoutMs: number; ageMs: number; now: () => number },
): Promise<SlotDecision> {
  const { lockUntilMs, sendTimeoutMs, now } = options;
  const askedAtMs = now();
  const lockNeededMs = lockUntilMs === null ? 0 : Math.max(0, Math.min(sendTimeoutMs, (lockUntilMs - askedAtMs) / 2));
  const slot = await pacer.acquire(lockUntilMs === null ? Infinity : Math.max(0, lockUntilMs - lockNeededMs - askedAtMs), options.ageMs);
  const atMs = now();
  return {
    granted: slot.sent,
    askedAtMs,
    atMs,
    retryAtMs: atMs + (slot.sent ? 50 : slot.retryInMs),
    fits: (lock) => slot.sent && (lock === null || atMs + lockNeededMs <= lock),
  };
}
