// Model-based property test of credit grants (docs/grants.md): grants of every kind, pending
// and expiring (the clock lands on exactly effectiveAt and expiresAt), voids, adjustments
// either way, refunds of charges (repeated, partial, unknown), holds of both kinds and cycle
// changes. After every step Redis equals memory and every invariant holds per source:
// remaining + spent + held + expired + voided + refundedAfterEnd == amount, remaining >= 0,
// nothing left once ended, the cycle's balance + spent + held == allowance, available is
// the live sources' remaining, and a charge's refunds never exceed what it charged.
// While the tollgate on Redis has no grants yet, the sequences run on memory against a
// second memory tollgate (the invariants are checked all the same).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, type Tollgate } from '../../src/index.ts';
import { TEST_START, accountId, openTollgate, type TestGate } from '../helpers/tollgate.ts';
import { accountSetup, grantOps, propertyOptions, type Reached, runSequence, runs } from './harness.ts';

/** Few live grants, so that the limit (and the archiving of used grants) is reached. */
const GRANT_OPTIONS = { grants: { max: 3 } };

describe('credit grants on Redis against memory', () => {
  let gate: TestGate;
  let tg: Tollgate;
  beforeAll(async () => {
    gate = await openTollgate('ioredis', 'prop-grants', { ...propertyOptions(false), ...GRANT_OPTIONS });
    const onRedis = typeof (gate.tg.credits as { grant?: unknown }).grant === 'function';
    tg = onRedis ? gate.tg : createTollgate({ memory: true, ...propertyOptions(false), ...GRANT_OPTIONS, clock: gate.clock.fn });
  });
  afterAll(() => gate.close());

  it('random grants, voids, expiries, adjustments, refunds, holds and cycle changes keep Redis equal to memory and every invariant per source', async () => {
    const reached: Reached = {};
    await fc.assert(
      fc.asyncProperty(accountSetup, fc.array(grantOps, { minLength: 1, maxLength: 40, size: 'max' }), async (setup, ops) => {
        gate.clock.set(TEST_START);
        await runSequence(tg, gate.clock, accountId('grants'), false, setup, ops, reached, GRANT_OPTIONS);
      }),
      { numRuns: runs(1000) },
    );
    if (process.env.TOLLGATE_PROPERTY_STATS) console.log(reached);
    for (const rule of [
      'granted',
      'grant_replayed',
      'grant_limit_reached',
      'grant_refused_as_bad_input',
      'grant_pending',
      'grant_expired',
      'advanced_to_effective',
      'advanced_to_expiry',
      'advanced_to_cycleEnd',
      'advanced_to_lease',
      'voided',
      'void_replayed',
      'void_of_nothing_left',
      'void_unknown_grant',
      'void_bad_input',
      'adjusted_up',
      'adjusted_down',
      'adjust_insufficient',
      'adjust_replayed',
      'adjust_bad_input',
      'refunded',
      'refund_replayed',
      'unknown_charge',
      'exceeds_charge',
      'refund_to_ended_grant',
      'refund_to_ended_cycle',
      'charge_from_several_sources',
      'hold_from_a_grant',
      'hold_from_several_sources',
      'lease_expired',
      'new_cycle',
    ]) {
      expect(reached[rule] ?? 0, `the generators never reached ${rule}`).toBeGreaterThan(0);
    }
  }, 900_000);
});
