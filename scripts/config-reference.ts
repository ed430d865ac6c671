// Writes docs/config-reference.md from the zod schema (npm run docs:config).
import { writeFileSync } from 'node:fs';
import { configReference } from '../src/composition/reference.ts';
import { CHANNEL_MODULES } from '../src/channels/registry.ts';
import { SOURCE_MODULES } from '../src/notices/registry.ts';

writeFileSync(new URL('../docs/config-reference.md', import.meta.url), configReference({ channels: CHANNEL_MODULES, sources: SOURCE_MODULES }));
