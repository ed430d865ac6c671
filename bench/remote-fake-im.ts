import { spawnNotice, waitForOutput, type Spawned } from '../test/helpers/spawn.ts';
import { freePort } from '../test/helpers/ports.ts';
import { benchNodeArgs } from './world.ts';
import type { Faults, ReceivedMessage } from '../src/fake-im/server.ts';

/**
 * fake-im in a process of its own (the compiled CLI), for the rate-limit phase: Tencent's gateway counts requests
 * on arrival, and an in-process fake-im would stamp arrivals late whenever the bench process itself pauses (its
 * GC, its writers), which is jitter the real gateway does not add.
 */
export class RemoteFakeIm {
  private proc: Spawned | null = null;
  private constructor(readonly port: number) {}

  static async reservePort(): Promise<RemoteFakeIm> {
    return new RemoteFakeIm(await freePort());
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(configFile: string): Promise<void> {
    this.proc = spawnNotice(['fake-im', '--config', configFile, '--port', String(this.port)], {}, benchNodeArgs());
    await waitForOutput(this.proc, /fake-im listening/, 30_000);
  }

  async setFaults(faults: Faults): Promise<void> {
    const res = await fetch(`${this.url}/_fake/faults`, { method: 'POST', body: JSON.stringify(faults) });
    if (!res.ok) throw new Error(`fake-im faults: HTTP ${res.status}`);
  }

  async stats(): Promise<{ requests: number; delivered: number; max_per_second: number; by_code: Record<string, number> }> {
    return (await fetch(`${this.url}/_fake/stats`)).json() as never;
  }

  async delivered(): Promise<ReceivedMessage[]> {
    const { messages } = (await (await fetch(`${this.url}/_fake/messages`)).json()) as { messages: ReceivedMessage[] };
    return messages.filter((m) => !m.duplicate);
  }

  async stop(): Promise<void> {
    if (this.proc && this.proc.child.exitCode === null) {
      this.proc.child.kill('SIGTERM');
      await this.proc.exited;
    }
  }
}
