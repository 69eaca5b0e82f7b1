/**
 * Limits in this process's memory, no Redis involved:
 *   tollgate   limits.admit of a tollgate made with `memory: true` (the plan's one fixed
 *              window), over the same 1,000 accounts as the Redis rows;
 *   peer       rate-limiter-flexible RateLimiterMemory.consume over the same subjects.
 * Every operation checks its outcome, so a misconfigured run fails instead of measuring denials.
 */
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { createTollgate } from '../../src/index.ts';
import { BENCH_PLANS, BENCH_POLICIES, accountOf, createBenchAccounts } from '../fixture.ts';
import type { Scenario } from './requests.ts';

export const IN_PROCESS_SCENARIO = {
  memoryAdmit: 'tollgate admit, memory: true',
  rlfMemory: 'rate-limiter-flexible RateLimiterMemory consume',
} as const;

export type InProcessKey = keyof typeof IN_PROCESS_SCENARIO;

export async function inProcessScenarios(): Promise<Record<InProcessKey, Scenario>> {
  const tg = createTollgate({ memory: true, plans: BENCH_PLANS, policies: BENCH_POLICIES });
  await createBenchAccounts(tg);
  const limiter = new RateLimiterMemory({ keyPrefix: 'rlf', points: 1_000_000_000, duration: 60 });
  return {
    // Both check their outcome in one callback (consume also rejects a denial).
    memoryAdmit: {
      name: IN_PROCESS_SCENARIO.memoryAdmit,
      op: (i) =>
        tg.limits.admit(accountOf(i)).then((admission) => {
          if (!admission.ok) throw new Error('the memory admit denied a bench request');
        }),
    },
    rlfMemory: {
      name: IN_PROCESS_SCENARIO.rlfMemory,
      op: (i) =>
        limiter.consume(accountOf(i)).then((res) => {
          if (res.remainingPoints < 0) throw new Error('RateLimiterMemory denied a bench request');
        }),
    },
  };
}
