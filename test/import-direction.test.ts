import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const PROCESS_FOLDERS = ['ingest', 'deliver', 'dashboard', 'cli'];

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Every import of a file as TypeScript reads it: static, type-only, re-exports and dynamic import(). */
function importsOf(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

function offendersIn(folder: string, forbidden: readonly string[]): string[] {
  const offenders: string[] = [];
  for (const file of tsFiles(join(ROOT, folder))) {
    for (const spec of importsOf(file)) {
      if (!spec.startsWith('.')) continue;
      const target = relative(ROOT, join(file, '..', spec)).split(/[\\/]/)[0]!;
      if (forbidden.includes(target)) offenders.push(`${relative(ROOT, file)}: ${spec}`);
    }
  }
  return offenders;
}

describe('imports run one way', () => {
  it('the core under src/ never imports a process folder or the executable (cli/ composes them)', () => {
    expect(offendersIn('src', PROCESS_FOLDERS)).toEqual([]);
  });

  it('queues/ (the ingest–deliver contract) imports only the core', () => {
    expect(offendersIn('queues', PROCESS_FOLDERS)).toEqual([]);
  });

  it('process folders do not import each other', () => {
    for (const folder of ['ingest', 'deliver', 'dashboard'])
      expect(
        offendersIn(
          folder,
          PROCESS_FOLDERS.filter((f) => f !== folder),
        ),
      ).toEqual([]);
  });

  it('a channel folder imports no other channel, nor the registry or routing (what it needs of them comes in its ChannelContext)', () => {
    const channelsDir = join(ROOT, 'src', 'channels');
    const folders = readdirSync(channelsDir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    const offenders: string[] = [];
    for (const folder of folders) {
      for (const file of tsFiles(join(channelsDir, folder))) {
        for (const spec of importsOf(file)) {
          if (!spec.startsWith('.')) continue;
          const target = relative(channelsDir, join(file, '..', spec)).split(/[\\/]/);
          const otherChannel = target.length > 1 && target[0] !== '..' && target[0] !== folder;
          const shared = target.length === 1 && ['registry.ts', 'routing.ts'].includes(target[0]!);
          if (otherChannel || shared) offenders.push(`${relative(ROOT, file)}: ${spec}`);
        }
      }
    }
    expect(folders.length).toBeGreaterThanOrEqual(3);
    expect(offenders).toEqual([]);
  });

  it("a source imports no provider or channel (a channel's limits are the channel's)", () => {
    const notices = join(ROOT, 'src', 'notices');
    const offenders = tsFiles(notices).flatMap((file) =>
      importsOf(file)
        .filter(
          (spec) => spec.startsWith('.') && /^(tencent-im|channels|fake-im)$/.test(relative(join(ROOT, 'src'), join(file, '..', spec)).split(/[\\/]/)[0]!),
        )
        .map((spec) => `${relative(ROOT, file)}: ${spec}`),
    );
    expect(offenders).toEqual([]);
  });

  it('the scanner sees dynamic and type-only imports (so the checks above can fail)', () => {
    const found = ts
      .preProcessFile("import type { A } from '../deliver/a.ts';\nconst m = await import('../ingest/b.ts');", true, true)
      .importedFiles.map((f) => f.fileName);
    expect(found).toEqual(['../deliver/a.ts', '../ingest/b.ts']);
  });
});
