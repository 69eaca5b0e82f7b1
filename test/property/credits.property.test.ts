// Model-based property test of charges, cycles and plan changes: after every step
// Redis equals memory, balance + spent + held == allowance and balance >= 0. 1,000
// sequences in CI; TOLLGATE_PROPERTY_RUNS asks for a longer run.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_START, accountId, openTollgate, type TestGate } from '../helpers/tollgate.ts';
import { accountSetup, creditOps, propertyOptions, type Reached, runSequence, runs } from './harness.ts';

describe('credit rules on Redis against memory', () => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate('ioredis', 'prop-credits', propertyOptions(false));
  });
  afterAll(() => gate.close());

  it('random admit / charge / new cycle / plan change / usage / history keep Redis equal to memory and the invariants', async () => {
    const reached: Reached = {};
    await fc.assert(
      fc.asyncProperty(accountSetup, fc.array(creditOps, { minLength: 1, maxLength: 25, size: 'max' }), async (setup, ops) => {
        gate.clock.set(TEST_START);
        await runSequence(gate.tg, gate.clock, accountId('credits'), false, setup, ops, reached);
      }),
      { numRuns: runs(1000) },
    );
    for (const rule of [
      'admitted',
      'admitted_short_of_credits',
      'rate_limited',
      'charged',
      'charge_insufficient',
      'charge_replayed',
      'new_cycle',
      'history_of_several_days',
    ]) {
      expect(reached[rule] ?? 0, `the generators never reached ${rule}`).toBeGreaterThan(0);
    }
  }, 600_000);
});
