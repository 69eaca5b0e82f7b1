// Model-based property test over whole accounts (issue: bulk jobs): create with and without
// keys, comments, cap hits, insufficient; record results and pages; finish, cancel, sweep,
// collections, new cycle, plan change, clock advance. After every step Redis equals the model
// and every invariant holds: per cycle balance + spent + held == allowance, balance >= 0,
// results <= videos, each refund at most once (an ended job holds nothing and never refunds
// again), refunds to ended cycles never raise the current balance (SPEC §3, §6, §7).
// 2,000 sequences in CI; TOLLGATE_PROPERTY_RUNS=20000 for a longer run.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_START, accountId, openTollgate, type TestGate } from '../helpers/tollgate.ts';
import { LEASE_MS, PROPERTY_PLANS, accountSetup, type Reached, jobOps, runSequence, runs } from './harness.ts';

describe('jobs, collections and idempotency against the reference model', () => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate('node-redis', 'prop-jobs', { plans: PROPERTY_PLANS, leaseMs: LEASE_MS });
  });
  afterAll(() => gate.close());

  it('random whole-account histories keep Redis equal to the model and every credit invariant', async () => {
    const reached: Reached = {};
    await fc.assert(
      fc.asyncProperty(accountSetup, fc.array(jobOps, { minLength: 1, maxLength: 40 }), async (setup, ops) => {
        gate.clock.set(TEST_START);
        await runSequence(gate.tg, gate.clock, accountId('jobs'), setup, ops, reached);
      }),
      { numRuns: runs(2000) },
    );
    if (process.env.TOLLGATE_PROPERTY_STATS) console.log(reached);
    for (const rule of ['job_created', 'job_replayed', 'job_limit_reached', 'job_limit_reached_replayed', 'insufficient', 'plan_not_allowed', 'idempotency_key_reused', 'result_accepted', 'result_job_ended', 'result_lease_expired', 'refund_to_ended_cycle', 'lease_expired', 'new_cycle']) expect(reached[rule] ?? 0, `the generators never reached ${rule}`).toBeGreaterThan(0);
  }, 900_000);
});
