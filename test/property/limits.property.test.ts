// Model-based property test of limits (issue: limits for any subject): windows fixed and
// sliding, one or two per surface, cost, policies for subjects without an account, peek,
// reset, plan changes, with stagger off and on. After every step the answers and the stored
// account equal the model's. 1,000 sequences per setting in CI.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_START, accountId, openTollgate, type TestGate } from '../helpers/tollgate.ts';
import { accountSetup, limitOps, propertyOptions, type Reached, runSequence, runs } from './harness.ts';

describe.each([false, true])('limits on Redis against memory (stagger %s)', (stagger) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(stagger ? 'node-redis' : 'ioredis', `prop-limits-${stagger}`, propertyOptions(stagger));
  });
  afterAll(() => gate.close());

  it('random admits with costs, policy admits, peeks, resets and clock moves keep Redis equal to memory', async () => {
    const reached: Reached = {};
    await fc.assert(
      fc.asyncProperty(accountSetup, fc.array(limitOps, { minLength: 1, maxLength: 30, size: 'max' }), async (setup, ops) => {
        gate.clock.set(TEST_START + (stagger ? 12_345 : 0));
        await runSequence(gate.tg, gate.clock, accountId('limits'), stagger, setup, ops, reached);
      }),
      { numRuns: runs(1000) },
    );
    if (process.env.TOLLGATE_PROPERTY_STATS) console.log(reached);
    for (const rule of [
      'admitted',
      'rate_limited',
      'cost_exceeds_limit',
      'admitted_in_two_windows',
      'denied_in_two_windows',
      'policy_admitted',
      'policy_denied',
      'unknown_surface',
      'reset',
    ]) {
      expect(reached[rule] ?? 0, `the generators never reached ${rule}`).toBeGreaterThan(0);
    }
  }, 600_000);
});
