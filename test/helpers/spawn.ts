import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const BIN = join(process.cwd(), 'bin', 'notice-service.js');

export interface Spawned {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Runs the real `notice-service` executable (this tree's, or `bin` of another), capturing its stdout and stderr. */
export function spawnNotice(args: string[], env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = [], bin = BIN): Spawned {
  const child = spawn(process.execPath, [...nodeArgs, bin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

export async function waitForOutput(proc: Spawned, pattern: RegExp, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(proc.output())) {
    if (Date.now() > deadline) throw new Error(`no ${pattern} in output:\n${proc.output().slice(-2000)}`);
    if (proc.child.exitCode !== null) throw new Error(`process exited ${proc.child.exitCode}:\n${proc.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function stopGracefully(proc: Spawned): Promise<number | null> {
  if (proc.child.exitCode !== null) return proc.child.exitCode;
  proc.child.kill('SIGTERM');
  return proc.exited;
}
