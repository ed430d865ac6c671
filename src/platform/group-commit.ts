/**
 * Group-commit scheduling for a DataLoader: with no statement of this kind in flight a batch goes at once (no added
 * latency when idle); while one is in flight, new calls pile up and go together as soon as it returns. Batches
 * grow with load instead of with a fixed wait.
 */
export function groupCommit() {
  let inflight: Promise<unknown> | null = null;
  return {
    schedule(dispatch: () => void) {
      const go = () => setImmediate(dispatch);
      // then(go, go): the batch in flight may fail; that failure belongs to its own callers, not to this one.
      if (inflight) inflight.then(go, go);
      else go();
    },
    track<T>(work: Promise<T>): Promise<T> {
      const clear = () => {
        if (inflight === work) inflight = null;
      };
      work.then(clear, clear);
      inflight = work;
      return work;
    },
  };
}
