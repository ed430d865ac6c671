import pRetry, { AbortError } from 'p-retry';

/** InnoDB picked this statement as a deadlock victim (1213) or gave up waiting for a lock (1205): safe to rerun. */
const RETRYABLE_ERRNO = new Set([1213, 1205]);

/**
 * Batched statements from several processes can deadlock on secondary-index locks. InnoDB rolls back one of them
 * whole, so running it again is correct; anything else is passed through at once.
 */
export function retryOnDeadlock<T>(statement: () => Promise<T>): Promise<T> {
  return pRetry(
    async () => {
      try {
        return await statement();
      } catch (err) {
        if (RETRYABLE_ERRNO.has((err as { errno?: number }).errno ?? 0)) throw err;
        throw new AbortError(err as Error);
      }
    },
    { retries: 4, minTimeout: 5, maxTimeout: 100, randomize: true },
  );
}
