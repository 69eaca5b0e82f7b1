import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The top level of the repository is fixed, so the config lives here and points back up.
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/globalSetup.ts'],
    testTimeout: 30_000,
    // Starting a Redis Cluster (three servers, slot assignment, gossip) takes a few seconds.
    hookTimeout: 60_000,
    // Child processes (redis-server) and native sockets are simplest to reason about in forks.
    pool: 'forks',
    // Files share one Redis but each uses its own key prefix, so they may run side by side.
    fileParallelism: true,
  },
});
