// Writes the error-code table into docs/runbook.md between its markers (npm run docs:errors).
import { readFileSync, writeFileSync } from 'node:fs';
import { withErrorGuide } from '../src/ops/error-guide-doc.ts';

const file = new URL('../docs/runbook.md', import.meta.url);
writeFileSync(file, withErrorGuide(readFileSync(file, 'utf8')));
