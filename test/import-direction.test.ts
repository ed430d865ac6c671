import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const PROCESS_FOLDERS = ['ingest', 'deliver', 'dashboard'];

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

describe('imports run one way', () => {
  it('the core under src/ never imports a process folder; only the executable (src/cli) composes them', () => {
    const offenders: string[] = [];
    for (const file of tsFiles(join(ROOT, 'src'))) {
      const rel = relative(ROOT, file);
      if (rel.startsWith(join('src', 'cli'))) continue;
      readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
        const spec = /(?:from|import\()\s*'([^']+)'/.exec(line)?.[1];
        if (!spec?.startsWith('.')) return;
        const target = relative(ROOT, join(file, '..', spec)).split(/[\\/]/)[0]!;
        if (PROCESS_FOLDERS.includes(target)) offenders.push(`${rel}:${i + 1}: ${spec}`);
      });
    }
    expect(offenders).toEqual([]);
  });
});
