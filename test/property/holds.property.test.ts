// Model-based property test over whole accounts (issue: holds): items holds and budget holds
// with and without Idempotency-Keys, cap hits, insufficient balances, settlements delivered
// and failed with labels, optionalSpent, spends, replays, finish, cancel, leases and their renewals, sweeps, new
// cycles, plan changes, clock moves, API keys and Idempotency-Key claims. After every step
// Redis equals memory (the reference model behind the public API) and every
// invariant holds: per cycle balance + spent + held == allowance, balance >= 0, each refund
// at most once (an ended hold holds nothing), refunds to ended cycles never raise the current
// balance. 2,000 sequences in CI.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_START, accountId, openTollgate, type TestGate } from '../helpers/tollgate.ts';
import { accountSetup, keyOps, propertyOptions, type Reached, runSequence, runs } from './harness.ts';

describe('holds, keys and idempotency on Redis against memory', () => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate('node-redis', 'prop-holds', propertyOptions(false));
  });
  afterAll(() => gate.close());

  it('random whole-account histories keep Redis equal to memory and every credit invariant', async () => {
    const reached: Reached = {};
    await fc.assert(
      fc.asyncProperty(accountSetup, fc.array(keyOps, { minLength: 1, maxLength: 40, size: 'max' }), async (setup, ops) => {
        gate.clock.set(TEST_START);
        await runSequence(gate.tg, gate.clock, accountId('holds'), false, setup, ops, reached);
      }),
      { numRuns: runs(2000) },
    );
    if (process.env.TOLLGATE_PROPERTY_STATS) console.log(reached);
    for (const rule of [
      'open_opened',
      'openBudget_opened',
      'hold_replayed',
      'hold_limit_reached',
      'hold_limit_reached_replayed',
      'insufficient',
      'surface_not_allowed',
      'too_many_items',
      'idempotency_key_reused',
      'open_refused_as_bad_input',
      'settle_accepted',
      'spend_accepted',
      'settle_replayed',
      'settle_hold_ended',
      'settle_lease_expired',
      'settle_budget_exhausted',
      'settle_bad_input',
      'end_of_an_ended_hold',
      'renew_renewed',
      'renew_ended',
      'refund_to_ended_cycle',
      'lease_expired',
      'new_cycle',
      'key_issued',
      'key_admitted',
      'key_denied',
      'key_usage',
      'key_unknown',
      'key_expired',
      'key_surface_not_allowed',
      'begin_new',
      'begin_in_use',
      'begin_replay',
      'begin_reused',
      'claimed_open',
    ]) {
      expect(reached[rule] ?? 0, `the generators never reached ${rule}`).toBeGreaterThan(0);
    }
  }, 900_000);
});
