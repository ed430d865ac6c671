import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';

/** A private redis-server on a loopback port, for tests that must change its settings or take it down. */
export class PrivateRedis {
  private child: ChildProcess | null = null;
  readonly dir = mkdtempSync(join(tmpdir(), 'notice-redis-'));
  port = 0;

  constructor(private readonly args: string[] = []) {}

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null;
  }

  async start(port?: number): Promise<string> {
    this.port = port ?? this.port ?? (await freePort());
    if (!this.port) this.port = await freePort();
    this.child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, ...this.args],
      { stdio: 'ignore' },
    );
    const deadline = Date.now() + 10_000;
    while (
      spawnSync('redis-cli', ['-p', String(this.port), 'ping'])
        .stdout?.toString()
        .trim() !== 'PONG'
    ) {
      if (Date.now() > deadline) throw new Error(`redis-server on ${this.port} did not start`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return `redis://127.0.0.1:${this.port}`;
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null) return;
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
