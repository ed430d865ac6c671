import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The tree the cost phase compares against: the last commit before issue 37's changes. BENCH_BASELINE_REF overrides it
 * (any commit of this repository).
 */
export const COST_BASELINE_REF = 'b94fe5b';

/**
 * Builds the tree at `ref` from git once into .tmp/trees/<sha> (git archive, its own `npm ci` from its lockfile, as
 * its dependencies may differ, then `npm run build`) and returns its `bin/notice-service.js`: the same processes,
 * the other code, same run, same box.
 */
export function buildTree(ref: string, log: (text: string) => void): { bin: string; sha: string } {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { encoding: 'utf8' }).trim();
  const dir = resolve('.tmp', 'trees', sha.slice(0, 12));
  const bin = join(dir, 'bin', 'notice-service.js');
  if (existsSync(join(dir, 'dist', 'cli', 'main.js'))) return { bin, sha };
  log(`building the baseline tree ${sha.slice(0, 12)} into ${dir}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', `git archive ${sha} | tar -x -C '${dir}'`]);
  execFileSync('npm', ['ci', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  return { bin, sha };
}
