import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// The core suites that must also hold under cluster key routing (docs/concepts.md#redis-and-the-runtime:
// standalone or Redis Cluster). They run unchanged: helpers/tollgate.ts connects cluster clients in that project.
const ON_CLUSTER = [
  'test/accounts.test.ts',
  'test/limits.test.ts',
  'test/windows.test.ts',
  'test/policies.test.ts',
  'test/keys.test.ts',
  'test/denyCache.test.ts',
  'test/credits.test.ts',
  'test/holds.test.ts',
  'test/sweep.test.ts',
  'test/history.test.ts',
  'test/idempotency.test.ts',
  'test/property/*.test.ts',
  'test/cluster/**/*.test.ts',
  // The example servers' contract, on a cluster through the same harness (about 9 s more on 2
  // cores). Not failure.test.ts: it kills a standalone server of its own.
  'test/examples/contract/rest.test.ts',
  'test/examples/contract/jobs.test.ts',
  'test/examples/contract/web.test.ts',
  'test/examples/contract/mcp.test.ts',
  'test/examples/contract/worker.test.ts',
  'test/examples/contract/failedAuth.test.ts',
];

// The fast tier (`npm run test:fast`, docs in CONTRIBUTING.md): the core suites on one Redis, in
// under a minute, for after every change. Not here: the cluster project, the examples' contract
// and browser tests, faults, soak, peers, the package, the benchmarks, the replicas of the
// durability suite, and the property tests (at fewer runs their checks that every rule was
// reached fail by chance). `npm test` runs everything, as CI does.
const FAST = [
  'test/accounts.test.ts',
  'test/canonicalJson.test.ts',
  'test/credits.test.ts',
  'test/cycles.test.ts',
  'test/denyCache.test.ts',
  'test/docs.test.ts',
  'test/harness.test.ts',
  'test/history.test.ts',
  'test/holds.test.ts',
  'test/http.test.ts',
  'test/idempotency.test.ts',
  'test/keys.test.ts',
  'test/limits.test.ts',
  'test/middleware.test.ts',
  'test/policies.test.ts',
  'test/readme.test.ts',
  'test/resend.test.ts',
  'test/scripts.test.ts',
  'test/sweep.test.ts',
  'test/telemetry.test.ts',
  'test/validation.test.ts',
  'test/windows.test.ts',
];

/** The fast tier runs only its own project, so that `npm test` never runs its files twice. */
const FAST_TIER = process.env.TOLLGATE_TEST_TIER === 'fast';

// The top level of the repository is fixed, so the config lives here and points back up.
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    reporters: ['default', './test/helpers/summaryReporter.ts'],
    testTimeout: 30_000,
    // Starting a Redis Cluster (three servers, slot assignment, gossip) takes a few seconds.
    hookTimeout: 60_000,
    // Child processes (redis-server) and native sockets are simplest to reason about in forks.
    pool: 'forks',
    // Files share one Redis but each uses its own key prefix, so they may run side by side.
    fileParallelism: true,
    // Two runs of the same files: against one redis-server, and against a 3-master cluster
    // (globalSetup.ts starts what each needs). `--project standalone` or `--project cluster`
    // runs one of them.
    projects: FAST_TIER
      ? [{ extends: true, test: { name: 'fast', globalSetup: ['test/helpers/globalSetup.ts'], include: FAST } }]
      : [
          {
            extends: true,
            test: {
              name: 'standalone',
              globalSetup: ['test/helpers/globalSetup.ts'],
              include: ['test/**/*.test.ts'],
              exclude: [...configDefaults.exclude, 'test/cluster/**'],
            },
          },
          {
            extends: true,
            test: {
              name: 'cluster',
              globalSetup: ['test/helpers/globalSetup.ts'],
              // The model-based suites keep their full counts here: with fewer runs their checks that
              // the generators reached every rule (e.g. a replayed job-cap 429) fail by chance.
              include: ON_CLUSTER,
            },
          },
        ],
  },
});
