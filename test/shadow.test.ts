// Shadow windows (docs/limits.md, "Shadow windows"): `shadow: true` counts as usual but never
// denies; the admission lists the shadow windows that would have denied (shadowDenials), and
// the headers never show a shadow window. On both clients and memory, accounts and policy
// subjects; the model is checked against Redis step by step.
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Plan, SurfaceWindows } from '../src/index.ts';
import { rateLimitHeaders } from '../src/http.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { limitsInLockstep } from './helpers/lockstep.ts';
import { TEST_START, backends, newAccount, openTollgate, type TestGate } from './helpers/tollgate.ts';

const plan = (limits: SurfaceWindows): Plan => ({ limits, credits: { allowance: 100, cycle: { days: 30 } }, holds: { cap: 1, maxItems: 10, surfaces: [] } });

const PLANS = {
  ...EXAMPLE_PLANS,
  // The enforced minute of 10, and a stricter 3 per 10 s tried in shadow.
  trial: plan({
    api: [
      { limit: 10, windowMs: 60_000 },
      { limit: 3, windowMs: 10_000, shadow: true },
    ],
  }),
  // Only a shadow window: nothing is ever denied.
  dryRun: plan({ api: [{ limit: 2, windowMs: 60_000, shadow: true }] }),
  shadowBucket: plan({
    api: [
      { limit: 5, windowMs: 60_000 },
      { algorithm: 'bucket', limit: 1, windowMs: 1_000, burst: 2, shadow: true },
    ],
  }),
};
const POLICIES = {
  trial: {
    api: [
      { limit: 6, windowMs: 10_000 },
      { limit: 4, windowMs: 5_000, algorithm: 'sliding' as const, shadow: true },
      { algorithm: 'bucket' as const, limit: 2, windowMs: 1_000, burst: 3, shadow: true },
    ],
  },
};

describe.each(backends())('shadow windows through %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'shadow', { plans: PLANS, policies: POLICIES });
  });
  afterAll(() => gate.close());
  beforeEach(() => {
    gate.clock.set(TEST_START + 5_000);
  });

  it('a shadow window counts past its limit but never denies; the admission lists it as a shadow denial', async () => {
    const id = await newAccount(gate.tg, 'trial');
    for (let i = 1; i <= 3; i++) {
      const a = await gate.tg.limits.admit(id);
      expect(a.allowed).toBe(true);
      expect(a).not.toHaveProperty('shadowDenials');
    }
    const fourth = await gate.tg.limits.admit(id);
    expect(fourth).toMatchObject({ allowed: true, rateLimit: { limit: 10, remaining: 6 } });
    expect(fourth.shadowDenials).toEqual([{ limit: 3, remaining: 0, resetMs: 5_000, windowMs: 10_000, algorithm: 'fixed', shadow: true }]);
    expect(fourth.windows[1]).toMatchObject({ shadow: true, remaining: 0 });
    // The enforced window still denies at its limit, and then counts nothing in the shadow.
    for (let i = 5; i <= 10; i++) expect((await gate.tg.limits.admit(id)).allowed).toBe(true);
    const denied = await gate.tg.limits.admit(id);
    expect(denied).toMatchObject({ allowed: false, reason: 'rate_limited', retryAfterMs: 55_000, rateLimit: { limit: 10, remaining: 0 } });
    expect(denied.shadowDenials).toHaveLength(1);
  });

  it('the headers show the enforced window, never a shadow one', async () => {
    const id = await newAccount(gate.tg, 'trial');
    for (let i = 0; i < 5; i++) await gate.tg.limits.admit(id);
    const a = await gate.tg.limits.admit(id);
    const headers = rateLimitHeaders(a, { ietf: true });
    expect(headers['X-RateLimit-Limit']).toBe('10');
    expect(headers['RateLimit-Policy']).toBe('"api";q=10;w=60');
  });

  it('a surface of only shadow windows denies nothing', async () => {
    const id = await newAccount(gate.tg, 'dryRun');
    for (let i = 1; i <= 5; i++) {
      const a = await gate.tg.limits.admit(id);
      expect(a.allowed).toBe(true);
      expect(a.shadowDenials?.length ?? 0).toBe(i > 2 ? 1 : 0);
    }
    expect(await gate.tg.limits.admit(id, { cost: 3 })).toMatchObject({ allowed: true, shadowDenials: [{ remaining: 0 }] });
  });

  it('a shadow bucket that would deny takes nothing, and admits', async () => {
    const id = await newAccount(gate.tg, 'shadowBucket');
    await gate.tg.limits.admit(id);
    await gate.tg.limits.admit(id);
    const third = await gate.tg.limits.admit(id);
    expect(third).toMatchObject({ allowed: true, rateLimit: { limit: 5, remaining: 2 }, shadowDenials: [{ algorithm: 'bucket', remaining: 0, shadow: true }] });
    gate.clock.advance(1_000);
    const fourth = await gate.tg.limits.admit(id);
    expect(fourth.shadowDenials).toBeUndefined();
  });
});

describe.each(backends().filter((b) => b !== 'memory'))('shadow windows on %s agree with the model', (kind) => {
  let redis: TestGate;
  beforeAll(async () => {
    redis = await openTollgate(kind, 'shadow-prop', { policies: POLICIES });
  });
  afterAll(() => redis.close());

  it('random costs and pauses on a policy with a fixed, a shadow sliding and a shadow bucket window', async () => {
    const step = fc.record({ pause: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 4_000 })), cost: fc.integer({ min: 0, max: 7 }) });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        run += 1;
        const subject = `ip:shadow-${kind}-${process.pid}-${run}`;
        const memory = await openTollgate('memory', 'shadow-model', { policies: POLICIES });
        redis.clock.set(TEST_START + 3);
        memory.clock.set(TEST_START + 3);
        await limitsInLockstep(redis, memory, subject, { policy: 'trial' }, steps);
      }),
      { numRuns: 40 },
    );
  });
});
