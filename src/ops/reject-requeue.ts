import type { RejectStore } from '../intake/reject-store.ts';
import type { FactRecorder } from '../intake/fact-recorder.ts';
import type { ParsedMessage } from '../rocketmq/consumer-loop.ts';

export interface RejectRequeueDeps {
  rejects: RejectStore;
  /** The MQ module's parser and recorder for a source_name, or null when no module owns it any more. */
  entryFor(sourceName: string): { parse: (body: Buffer, recordedAtMs: number) => ParsedMessage; recorder: FactRecorder } | null;
  now?: () => number;
}

export interface RejectRequeueResult {
  requeued: number[];
  stillRejected: Array<{ id: number; reason: string }>;
  missing: number[];
}

/**
 * Puts rejected MQ messages back through the entry they came by: parsed again (a config or code change may have fixed
 * the cause) and recorded like a fresh delivery, ledger row and job. A message that still cannot be parsed stays, with
 * today's reason; one that was recorded leaves the reject table.
 */
export async function requeueRejected(deps: RejectRequeueDeps, ids: readonly number[]): Promise<RejectRequeueResult> {
  const now = deps.now ?? Date.now;
  const result: RejectRequeueResult = { requeued: [], stillRejected: [], missing: [] };
  for (const id of ids) {
    const message = await deps.rejects.get(id);
    if (!message) {
      result.missing.push(id);
      continue;
    }
    const entry = deps.entryFor(message.sourceName);
    if (!entry) {
      result.stillRejected.push({ id, reason: `no MQ module reads source ${message.sourceName} any more` });
      continue;
    }
    if (message.keptBytes < message.bodyBytes) {
      result.stillRejected.push({
        id,
        reason: `only the first ${message.keptBytes} of its ${message.bodyBytes} bytes were kept (a body that long can never be parsed); it cannot be requeued`,
      });
      continue;
    }
    const parsed = entry.parse(message.rawBody, now());
    if (parsed.kind === 'poison') {
      await deps.rejects.updateReason(id, parsed.reason);
      result.stillRejected.push({ id, reason: parsed.reason });
      continue;
    }
    await entry.recorder.record([parsed.fact]);
    await deps.rejects.remove(id);
    result.requeued.push(id);
  }
  return result;
}
