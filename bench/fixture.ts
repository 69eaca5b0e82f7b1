/**
 * What the scenarios share: a plan and a policy no benchmark can exhaust, the subjects the
 * operations go round-robin over (a real server spreads its calls over many keys), one API key
 * per account, and a bounded parallel loop for setting things up.
 */
import type { PlanTable, PolicyTable, Tollgate } from '../src/index.ts';
import { MAX_LIMIT } from '../src/rules/windows.ts';

/**
 * Windows and credits no run can use up, so every measured call takes the allowed path. One
 * fixed one-minute window per surface: the example's hot path. Holds may be opened on both
 * surfaces, never reach their cap and take up to 5,000 items.
 */
export const BENCH_PLANS = {
  bench: {
    limits: { api: [{ limit: MAX_LIMIT, windowMs: 60_000 }], web: [{ limit: MAX_LIMIT, windowMs: 60_000 }] },
    credits: { allowance: 1_000_000_000_000, cycle: { days: 30 } },
    holds: { cap: 1_000_000_000, maxItems: 5_000, surfaces: ['api', 'web'] },
  },
} as const satisfies PlanTable;

/** Subjects without an account (ip:...) limited by one fixed one-minute window, or one bucket. */
export const BENCH_POLICIES = {
  anonymous: { api: [{ limit: MAX_LIMIT, windowMs: 60_000 }] },
  /** The same subjects by one token bucket: what a bucket costs beside a fixed window. */
  bucket: { api: [{ algorithm: 'bucket', limit: MAX_LIMIT, windowMs: 60_000 }] },
  /** A fixed window and a concurrency limit: a request's place is taken, then released. */
  inFlight: {
    api: [
      { limit: MAX_LIMIT, windowMs: 60_000 },
      { algorithm: 'concurrency', limit: 1_000, leaseMs: 60_000 },
    ],
  },
} as const satisfies PolicyTable;

/** The lease of bench holds: long enough that nothing lapses during a run. */
export const BENCH_LEASE_MS = 24 * 3_600_000;

export const ACCOUNTS = 1_000;

/** The account of the i-th operation: acct-0 ... acct-999, round-robin. */
export function accountOf(i: number): string {
  return `acct-${i % ACCOUNTS}`;
}

/** The policy subject of the i-th operation: ip:10.0.0.0 ... (1,000 of them), round-robin. */
export function ipOf(i: number): string {
  const n = i % ACCOUNTS;
  return `ip:10.0.${n >> 8}.${n & 255}`;
}

/** Runs task(0..count-1) with at most `width` in flight. */
export async function parallel(count: number, width: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(width, count) }, lane));
}

/** Creates acct-0 ... acct-(ACCOUNTS-1) on the bench plan unless they exist. */
export async function createBenchAccounts(tg: Tollgate): Promise<void> {
  await parallel(ACCOUNTS, 64, async (i) => {
    try {
      await tg.accounts.create(accountOf(i), { plan: 'bench' });
    } catch (error) {
      if ((error as { code?: string }).code !== 'account_exists') throw error;
    }
  });
}

/** Issues one API key per bench account (all surfaces); keys[i] belongs to accountOf(i). */
export async function issueBenchKeys(tg: Tollgate): Promise<string[]> {
  const keys: string[] = [];
  await parallel(ACCOUNTS, 64, async (i) => {
    keys[i] = (await tg.keys.issue(accountOf(i), { name: 'bench' })).key;
  });
  return keys;
}
