/**
 * The "before" of the hot-path work: tollgate 0.1 (commit 0df5c85) measured by `npm run bench`
 * on 2026-11-23 04:47 UTC, on the machine the lead runs the bench on (AMD EPYC, 2 cores, Node
 * v24.21.0, Redis 7.0.15, node-redis 6.3.1, ioredis 6.0.0; 3 s cells after 1 s warm-up,
 * c = 1, 16, 64). The whole report of that run is bench/results/0.1.md. Each figure below is
 * the same ratio the target of the same id measures now, taken from that report's rows (mean
 * of the runs of a cell; Redis µs pooled over c = 16 and 64). Ratios only: absolute figures of
 * two runs are not comparable on this shared machine, ratios within one run are.
 * Where 0.1 had no such measure (keys were the example's own lookup; no policies; holds were
 * jobs), there is no entry, or an entry with a note on what it stands for.
 */
export interface BaselineValue {
  value: number;
  /** What the 0.1 figure is, when it is not the very same measure. */
  note?: string;
}

export const BASELINE_SOURCE = 'commit 0df5c85, npm run bench of 2026-11-23 04:47 UTC on the AMD EPYC machine: bench/results/0.1.md';

export const BASELINE: Readonly<Record<string, BaselineValue>> = {
  // Redis µs per call vs the floor script (INFO commandstats).
  'redis:admit:node-redis': { value: 3.99 },
  'redis:admit:ioredis': { value: 4.29 },
  'redis:precheck:node-redis': { value: 4.41 },
  'redis:precheck:ioredis': { value: 4.77 },
  'redis:charge:node-redis': { value: 12.09 },
  'redis:charge:ioredis': { value: 13.19 },
  // ops/s vs rate-limiter-flexible consume, same client and c.
  'ops:admit:node-redis:c16': { value: 0.88 },
  'ops:admit:node-redis:c64': { value: 0.97 },
  'ops:precheck:node-redis:c16': { value: 0.59 },
  'ops:precheck:node-redis:c64': { value: 0.58 },
  'ops:admit:ioredis:c16': { value: 0.87 },
  'ops:admit:ioredis:c64': { value: 0.88 },
  // p50 of a 5,000-item opening vs a 1-item one (0.1: jobs.reserve N=5,000 vs N=1).
  'p50:hold:node-redis:c1': { value: 0.82, note: 'jobs.reserve' },
  'p50:hold:node-redis:c16': { value: 0.96, note: 'jobs.reserve' },
  'p50:hold:node-redis:c64': { value: 1.1, note: 'jobs.reserve' },
  'p50:hold:ioredis:c1': { value: 0.93, note: 'jobs.reserve' },
  'p50:hold:ioredis:c16': { value: 1.01, note: 'jobs.reserve' },
  'p50:hold:ioredis:c64': { value: 0.99, note: 'jobs.reserve' },
  // Express thread busy µs per request vs express-rate-limit + rate-limit-redis.
  'http:verify:c16': { value: 1.22, note: 'admit middleware, no key check' },
  'http:verify:c64': { value: 1.15, note: 'admit middleware, no key check' },
  'http:exampleFree:c16': { value: 1.88, note: 'key lookup, then admit: 2 commands' },
  'http:exampleFree:c64': { value: 1.68, note: 'key lookup, then admit: 2 commands' },
  // Redis memory.
  'memory:account': { value: 251, note: '0.1 account, journal off' },
};
