import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// The core suites that must also hold under cluster key routing (docs/concepts.md#redis-and-the-runtime:
// standalone or Redis Cluster). They run unchanged: helpers/tollgate.ts connects cluster clients in that project.
const ON_CLUSTER = [
  'test/accounts.test.ts',
  'test/limits.test.ts',
  'test/windows.test.ts',
  'test/policies.test.ts',
  'test/buckets.test.ts',
  'test/shadow.test.ts',
  'test/overrides.test.ts',
  'test/keyLimits.test.ts',
  'test/accountErase.test.ts',
  'test/concurrency.test.ts',
  'test/planEdits.test.ts',
  'test/keys.test.ts',
  'test/denyCache.test.ts',
  'test/credits.test.ts',
  'test/grants.test.ts',
  'test/holds.test.ts',
  'test/sweep.test.ts',
  'test/events.test.ts',
  // Processes killed between a movement and its events' delivery, with cluster routing.
  'test/faults/eventsCrash.test.ts',
  'test/history.test.ts',
  'test/idempotency.test.ts',
  'test/property/*.test.ts',
  'test/cluster/**/*.test.ts',
  // The operator CLI's SCAN of each master, and its commands routed by key.
  'test/cli.test.ts',
  // The example servers' contract, on a cluster through the same harness (about 9 s more on 2
  // cores). Not failure.test.ts: it kills a standalone server of its own.
  'test/examples/contract/rest.test.ts',
  'test/examples/contract/jobs.test.ts',
  'test/examples/contract/web.test.ts',
  'test/examples/contract/mcp.test.ts',
  'test/examples/contract/worker.test.ts',
  'test/examples/contract/failedAuth.test.ts',
  'test/examples/contract/grants.test.ts',
  // The webhooks' consumer group and the dashboard's, whose record keys are the example's own.
  'test/examples/contract/webhooks.test.ts',
];

// The public-API suites run against both Redis clients and the memory tollgate
// (createTollgate({ memory: true })): helpers/tollgate.ts's backends() gives each file its
// backends, and the property tests compare Redis with memory after every step. Within them, a
// test of what only Redis has (stored keys and their TTLs, round trips, several servers on one
// store) is skipped on memory, with the reason beside it. These files run on Redis only:
//   scripts.test.ts       the Lua build, the bundle, functions and EVALSHA, key routing
//   denyCache.test.ts     the deny cache saves Redis calls; memory has none (the option is refused)
//   durability.test.ts    WAIT on replicas before a movement is acknowledged
//   resend.test.ts        a command a Redis client sends twice (resendIds)
//   endedHolds.test.ts    the tidy's bounded script calls and the stored ended holds (the
//                         model's bounds are checked against Redis by the property tests)
//   storeError.test.ts    what the middleware answers while Redis is unreachable
//   clientSetup.test.ts   the Redis client adapters' setup checks
//   cli.test.ts           the operator CLI, which reads and writes a Redis
//   telemetry.test.ts     a span per quota-store call (the option is refused with memory)
//   harness.test.ts       the private redis-servers the tests start
//   faults/**             the store timing out, failing over, crashing, losing its scripts
//   cluster/**            cluster slots and several app servers on one cluster
//   examples/**           the example service, which runs on Redis
//   soak/**, peers/**     load on Redis, and the Redis peers compared with
//   bench.test.ts         the benchmark's Redis harness
// The pure ones (canonicalJson, cycles, docs, package) have no backend.

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
  'test/events.test.ts',
  'test/telemetry.test.ts',
  'test/validation.test.ts',
  'test/windows.test.ts',
];

/** The fast tier runs only its own project, so that `npm test` never runs its files twice. */
const FAST_TIER = process.env.TOLLGATE_TEST_TIER === 'fast';

// The top level of the repository is fixed, so the config lives here and points back up.
export default defineConfig({
  // The examples import the package by its name, as a user does; the `tollgate-source`
  // condition of package.json's exports resolves it to this source tree (no build needed).
  // The rest are Vite's default server conditions, which a list given here replaces.
  ssr: { resolve: { conditions: ['tollgate-source', 'module', 'node', 'development|production'] } },
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
