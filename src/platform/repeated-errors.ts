import type { Logger } from 'pino';

/** How often one component's repeated errors are logged: once now, then once per interval with how many came between. */
export interface RepeatState {
  lastLoggedMs: number | null;
  /** Errors since the last line that were not logged. */
  unlogged: number;
}

/** Whether this error gets a line; the state after it. */
export function nextRepeat(state: RepeatState, nowMs: number, intervalMs: number): { log: boolean; repeated: number; state: RepeatState } {
  if (state.lastLoggedMs === null || nowMs - state.lastLoggedMs >= intervalMs) {
    return { log: true, repeated: state.unlogged, state: { lastLoggedMs: nowMs, unlogged: 0 } };
  }
  return { log: false, repeated: 0, state: { lastLoggedMs: state.lastLoggedMs, unlogged: state.unlogged + 1 } };
}

/**
 * A connection error handler that logs one line per `intervalMs` for one component, with the count of the errors it
 * held back: a Redis outage made every BullMQ worker and queue log each reconnect attempt (84 worker lines and 42
 * queue lines in 20 s from one process), burying everything else.
 */
export function repeatedErrors(logger: Logger, message: string, intervalMs = 10_000, now: () => number = Date.now): (err: Error) => void {
  let state: RepeatState = { lastLoggedMs: null, unlogged: 0 };
  return (err) => {
    const next = nextRepeat(state, now(), intervalMs);
    state = next.state;
    if (next.log) logger.warn({ err: err.message, ...(next.repeated > 0 ? { repeated: next.repeated, in_ms: intervalMs } : {}) }, message);
  };
}
