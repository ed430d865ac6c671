// Writes docs/config-reference.md from the zod schema (npm run docs:config).
import { writeFileSync } from 'node:fs';
import { configReference } from '../src/composition/reference.ts';
import { REGISTERED_MODULES } from '../src/composition/schema.ts';

writeFileSync(new URL('../docs/config-reference.md', import.meta.url), configReference(REGISTERED_MODULES));
