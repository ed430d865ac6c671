import { formatKey, type LedgerKey } from '../src/ledger/types.ts';

/**
 * The rows this process is working on. A row can have two jobs here at once — a batch job's copy and a job of its
 * own the reconciler gave it after Redis lost the batch — and the ledger claim cannot tell them apart (the lock is
 * this worker's either way), so the second waits for the first and then finds the row finished or claimable.
 */
export class OneRowAtATime {
  private readonly inFlight = new Map<string, Promise<unknown>>();

  async run<T>(key: LedgerKey, attempt: () => Promise<T>): Promise<T> {
    const id = formatKey(key);
    for (let running = this.inFlight.get(id); running; running = this.inFlight.get(id)) await running.catch(() => undefined);
    const done = attempt();
    this.inFlight.set(id, done);
    try {
      return await done;
    } finally {
      if (this.inFlight.get(id) === done) this.inFlight.delete(id);
    }
  }
}
