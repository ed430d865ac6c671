#!/usr/bin/env node
// Runs the TypeScript sources through tsx, so there is no separate build step to forget.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
