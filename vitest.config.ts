import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // A failure detector, not a speed budget: beside a CPU hog, at nice 19, one spawned CLI process takes seconds.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // Each test file gets its own databases and Redis prefix, so files run in parallel safely.
    fileParallelism: true,
    // Two cores: more parallel files only starve the spawned processes and make timing-sensitive tests flaky.
    maxWorkers: 2,
  },
});
