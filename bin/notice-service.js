#!/usr/bin/env node
// From source through tsx by default (nothing to rebuild while developing). NOTICE_DIST=1 runs the compiled
// JavaScript from `npm run build` instead: the Docker image and the benchmark do, for less memory and start-up.
if (process.env.NOTICE_DIST === '1') {
  await import('../dist/cli/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../cli/main.ts');
}
