// Token buckets (docs/limits.md, "Token buckets"): GCRA, `limit` tokens per `windowMs`
// refilled evenly, at most `burst` held; a denial takes nothing, retryAfterMs is exact, and a
// bucket mixes with fixed and sliding windows all-or-nothing. On both clients and memory,
// for accounts and policy subjects; the model is checked against Redis step by step.
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTollgate, type Plan, type SurfaceWindows } from '../src/index.ts';
import { InvalidInputError } from '../src/errors.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { limitsInLockstep } from './helpers/lockstep.ts';
import { TEST_START, backends, newAccount, openTollgate, type TestGate } from './helpers/tollgate.ts';

const plan = (limits: SurfaceWindows): Plan => ({ limits, credits: { allowance: 100, cycle: { days: 30 } }, holds: { cap: 1, maxItems: 10, surfaces: [] } });

const PLANS = {
  ...EXAMPLE_PLANS,
  // 10 tokens per second, 20 at once.
  bursty: plan({ api: [{ algorithm: 'bucket', limit: 10, windowMs: 1_000, burst: 20 }] }),
  // 3 per 10 s (one per 3333.3 ms), burst defaults to the limit.
  slow: plan({ api: [{ algorithm: 'bucket', limit: 3, windowMs: 10_000 }] }),
  // A bucket under a fixed minute budget.
  mixed: plan({
    api: [
      { algorithm: 'bucket', limit: 5, windowMs: 1_000, burst: 5 },
      { limit: 8, windowMs: 60_000 },
    ],
  }),
};
const POLICIES = {
  perIp: {
    api: [
      { algorithm: 'bucket' as const, limit: 2, windowMs: 1_000, burst: 4 },
      { limit: 100, windowMs: 60_000, algorithm: 'sliding' as const },
    ],
  },
  // One bucket alone: the scripts' straight-line path.
  oneBucket: { api: [{ algorithm: 'bucket' as const, limit: 7, windowMs: 3_000, burst: 9 }] },
};

describe.each(backends())('token buckets through %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'buckets', { plans: PLANS, policies: POLICIES });
  });
  afterAll(() => gate.close());
  beforeEach(() => {
    gate.clock.set(TEST_START + 15_000);
  });

  it('a full bucket takes a burst at once, then refills limit per windowMs evenly', async () => {
    const id = await newAccount(gate.tg, 'bursty');
    for (let i = 1; i <= 20; i++) {
      const a = await gate.tg.limits.admit(id);
      expect(a).toEqual({
        ok: true,
        allowed: true,
        rateLimit: a.windows[0],
        windows: [{ limit: 10, burst: 20, remaining: 20 - i, resetMs: i * 100, windowMs: 1_000, algorithm: 'bucket' }],
      });
    }
    const denied = await gate.tg.limits.admit(id);
    expect(denied).toMatchObject({ allowed: false, reason: 'rate_limited', retryAfterMs: 100, rateLimit: { remaining: 0, resetMs: 2_000 } });
    gate.clock.advance(99);
    expect((await gate.tg.limits.admit(id)).allowed).toBe(false);
    gate.clock.advance(1);
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: true, rateLimit: { remaining: 0, resetMs: 2_000 } });
    // Half a second brings 5 tokens back.
    gate.clock.advance(500);
    expect(await gate.tg.limits.peek(id)).toMatchObject({ rateLimit: { remaining: 5, resetMs: 1_500 } });
  });

  it('a denial takes nothing: retrying while denied does not push the next token back', async () => {
    const id = await newAccount(gate.tg, 'slow');
    for (let i = 0; i < 3; i++) expect((await gate.tg.limits.admit(id)).allowed).toBe(true);
    const first = await gate.tg.limits.admit(id);
    expect(first).toMatchObject({ allowed: false, retryAfterMs: 3_334 });
    for (let i = 0; i < 50; i++) {
      gate.clock.advance(10);
      expect((await gate.tg.limits.admit(id)).allowed).toBe(false);
    }
    gate.clock.set(TEST_START + 15_000 + 3_334);
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: true, rateLimit: { remaining: 0, resetMs: 10_000 } });
  });

  it('cost takes that many tokens; a cost above burst never fits', async () => {
    const id = await newAccount(gate.tg, 'bursty');
    expect(await gate.tg.limits.admit(id, { cost: 15 })).toMatchObject({ allowed: true, rateLimit: { remaining: 5, resetMs: 1_500 } });
    expect(await gate.tg.limits.admit(id, { cost: 6 })).toMatchObject({
      allowed: false,
      reason: 'rate_limited',
      retryAfterMs: 100,
      rateLimit: { remaining: 5 },
    });
    expect(await gate.tg.limits.admit(id, { cost: 21 })).toMatchObject({ allowed: false, reason: 'cost_exceeds_limit', retryAfterMs: null });
    expect(await gate.tg.limits.admit(id, { cost: 5 })).toMatchObject({ allowed: true, rateLimit: { remaining: 0, resetMs: 2_000 } });
  });

  it('mixes with a fixed window all-or-nothing: a request the minute denies takes no token', async () => {
    const id = await newAccount(gate.tg, 'mixed');
    for (let i = 0; i < 5; i++) expect((await gate.tg.limits.admit(id)).allowed).toBe(true);
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: false, reason: 'rate_limited', retryAfterMs: 200 });
    gate.clock.advance(1_000);
    for (let i = 0; i < 3; i++) expect((await gate.tg.limits.admit(id)).allowed).toBe(true);
    // The minute (8) is spent; its denial leaves the bucket's 2 tokens where they were.
    const denied = await gate.tg.limits.admit(id);
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 44_000, rateLimit: { algorithm: 'fixed', remaining: 0 } });
    expect(denied.windows[0]).toMatchObject({ algorithm: 'bucket', remaining: 2 });
    // Allowed, the headers show the window with the fewest left.
    gate.clock.set(TEST_START + 60_000);
    expect(await gate.tg.limits.admit(id, { cost: 4 })).toMatchObject({
      allowed: true,
      rateLimit: { algorithm: 'bucket', remaining: 1 },
      windows: [{ remaining: 1 }, { remaining: 4 }],
    });
  });

  it('a policy subject has buckets too; reset fills the bucket', async () => {
    const ip = `ip:bucket-${kind}-${Date.now()}`;
    for (let i = 0; i < 4; i++) expect((await gate.tg.limits.admit(ip, { policy: 'perIp' })).allowed).toBe(true);
    expect(await gate.tg.limits.admit(ip, { policy: 'perIp' })).toMatchObject({ allowed: false, retryAfterMs: 500 });
    await gate.tg.limits.reset(ip, { policy: 'perIp' });
    expect(await gate.tg.limits.admit(ip, { policy: 'perIp' })).toMatchObject({ allowed: true, rateLimit: { algorithm: 'bucket', remaining: 3 } });
  });
});

describe('bucket options', () => {
  it('are checked: burst only on buckets, a whole number >= 1, burst x windowMs within 2^53', () => {
    const make = (api: unknown) => () => createTollgate({ memory: true, plans: { p: plan({ api } as never) } });
    expect(make([{ algorithm: 'bucket', limit: 5, windowMs: 1_000, burst: 0 }])).toThrow(InvalidInputError);
    expect(make([{ algorithm: 'bucket', limit: 5, windowMs: 1_000, burst: 2.5 }])).toThrow(InvalidInputError);
    expect(make([{ limit: 5, windowMs: 1_000, burst: 10 }])).toThrow(/burst is for buckets only/);
    expect(make([{ algorithm: 'bucket', limit: 5, windowMs: 31 * 86_400_000, burst: 1_000_000_000 }])).toThrow(/2\^53/);
    expect(make([{ algorithm: 'leaky', limit: 5, windowMs: 1_000 }])).toThrow(/"bucket"/);
    expect(make([{ algorithm: 'bucket', limit: 5, windowMs: 1_000 }])).not.toThrow();
  });
});

describe.each(backends().filter((b) => b !== 'memory'))('buckets on %s agree with the model', (kind) => {
  let redis: TestGate;
  beforeAll(async () => {
    redis = await openTollgate(kind, 'buckets-prop', { policies: POLICIES });
  });
  afterAll(() => redis.close());

  it("random costs and pauses: every admission and peek is the model's", async () => {
    const step = fc.record({ pause: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 3_000 })), cost: fc.integer({ min: 0, max: 10 }) });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('perIp', 'oneBucket'), fc.array(step, { minLength: 1, maxLength: 30 }), async (policy, steps) => {
        run += 1;
        const subject = `ip:prop-${kind}-${process.pid}-${run}`;
        const memory = await openTollgate('memory', 'buckets-model', { policies: POLICIES });
        redis.clock.set(TEST_START + 7);
        memory.clock.set(TEST_START + 7);
        await limitsInLockstep(redis, memory, subject, { policy }, steps);
      }),
      { numRuns: 40 },
    );
  });
});
