// Model-based property test of the core (issue: admit / charge / new cycle / plan change /
// clock advance): after every step Redis equals the model, balance + spent + held ==
// allowance and balance >= 0 (SPEC §3-5). 1,000 sequences in CI.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_START, accountId, openTollgate, type TestGate } from '../helpers/tollgate.ts';
import { LEASE_MS, PROPERTY_PLANS, accountSetup, type Reached, coreOps, runSequence, runs } from './harness.ts';

describe('core credit rules against the reference model', () => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate('ioredis', 'prop-core', { plans: PROPERTY_PLANS, leaseMs: LEASE_MS });
  });
  afterAll(() => gate.close());

  it('random admit / charge / new cycle / plan change / clock advance keep Redis equal to the model and the invariants', async () => {
    const reached: Reached = {};
    await fc.assert(
      fc.asyncProperty(accountSetup, fc.array(coreOps, { minLength: 1, maxLength: 25 }), async (setup, ops) => {
        gate.clock.set(TEST_START);
        await runSequence(gate.tg, gate.clock, accountId('core'), setup, ops, reached);
      }),
      { numRuns: runs(1000) },
    );
    for (const rule of ['admitted', 'rate_limited', 'charged', 'charge_insufficient', 'charge_replayed', 'new_cycle']) expect(reached[rule] ?? 0, `the generators never reached ${rule}`).toBeGreaterThan(0);
  }, 600_000);
});
