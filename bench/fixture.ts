/**
 * What the scenarios share: a plan no benchmark can exhaust, the accounts the operations go
 * round-robin over (a real server spreads its calls over many keys), and a bounded parallel
 * loop for setting things up.
 */
import type { PlanTable, Tollgate } from "../src/index.ts";

/** Budgets and credits no run can use up, so every measured call takes the allowed path. */
export const BENCH_PLANS: PlanTable = {
  bench: {
    requestsPerMinute: 1_000_000_000,
    creditsPerCycle: 1_000_000_000_000,
    bulkJobs: true,
    activeJobCap: 1_000_000_000,
    maxVideosPerJob: 5_000,
    cycle: { days: 30 },
  },
};

export const ACCOUNTS = 1_000;

/** The account of the i-th operation: acct-0 ... acct-999, round-robin. */
export function accountOf(i: number): string {
  return `acct-${i % ACCOUNTS}`;
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
      await tg.accounts.create(accountOf(i), { plan: "bench" });
    } catch (error) {
      if ((error as { code?: string }).code !== "account_exists") throw error;
    }
  });
}
