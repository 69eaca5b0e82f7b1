// Overrides (docs/limits.md, "Overrides"): limits.override sets one subject's own windows on a
// surface, for an account or a policy subject, without a plan change; null clears it,
// expiresAt ends it; the counts carry over; limits.overrides lists them. On both clients and
// memory; the model is checked against Redis step by step.
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Plan, SurfaceWindows } from '../src/index.ts';
import { AccountNotFoundError, InvalidInputError } from '../src/errors.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { TEST_START, backends, newAccount, openTollgate, type TestGate } from './helpers/tollgate.ts';

const plan = (limits: SurfaceWindows): Plan => ({ limits, credits: { allowance: 100, cycle: { days: 30 } }, holds: { cap: 1, maxItems: 10, surfaces: [] } });
const PLANS = { ...EXAMPLE_PLANS, small: plan({ api: [{ limit: 5, windowMs: 60_000 }], web: [{ limit: 3, windowMs: 60_000 }] }) };
const POLICIES = { signin: { attempts: [{ limit: 3, windowMs: 60_000 }] } };
const minute = (limit: number) => [{ limit, windowMs: 60_000 }];

describe.each(backends())('overrides through %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'overrides', { plans: PLANS, policies: POLICIES });
  });
  afterAll(() => gate.close());
  beforeEach(() => {
    gate.clock.set(TEST_START + 15_000);
  });
  const admitN = async (id: string, n: number, options = {}) => {
    const outcomes = [];
    for (let i = 0; i < n; i++) outcomes.push((await gate.tg.limits.admit(id, options)).allowed);
    return outcomes;
  };

  it('a raise mid-window keeps what was used; clearing it brings the plan back with the same count', async () => {
    const id = await newAccount(gate.tg, 'small');
    expect(await admitN(id, 5)).toEqual([true, true, true, true, true]);
    expect((await gate.tg.limits.admit(id)).allowed).toBe(false);
    await gate.tg.limits.override(id, { surface: 'api', windows: minute(8) });
    // 5 used of 8: three more fit.
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: true, rateLimit: { limit: 8, remaining: 2 } });
    expect(await admitN(id, 3)).toEqual([true, true, false]);
    await gate.tg.limits.override(id, { surface: 'api', windows: null });
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: false, rateLimit: { limit: 5, remaining: 0 } });
    expect(await gate.tg.limits.overrides(id)).toEqual([]);
  });

  it('expiresAt makes it temporary: the plan is back at that ms, and the list drops it', async () => {
    const id = await newAccount(gate.tg, 'small');
    const expiresAt = TEST_START + 20_000;
    await gate.tg.limits.override(id, { windows: minute(100), expiresAt: new Date(expiresAt) });
    expect(await gate.tg.limits.overrides(id)).toEqual([{ surface: 'api', windows: [{ limit: 100, windowMs: 60_000, algorithm: 'fixed' }], expiresAt }]);
    expect(await admitN(id, 7)).toEqual(Array(7).fill(true));
    gate.clock.set(expiresAt - 1);
    expect((await gate.tg.limits.admit(id)).allowed).toBe(true);
    gate.clock.set(expiresAt);
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: false, rateLimit: { limit: 5, remaining: 0 } });
    expect(await gate.tg.limits.overrides(id)).toEqual([]);
  });

  it('a ban with limit 0 denies every request rate_limited until it ends; other surfaces are untouched', async () => {
    const id = await newAccount(gate.tg, 'small');
    await gate.tg.limits.override(id, { surface: 'api', windows: [{ limit: 0, windowMs: 3_600_000 }], expiresAt: TEST_START + 3_600_000 });
    expect(await gate.tg.limits.admit(id)).toMatchObject({
      allowed: false,
      reason: 'rate_limited',
      retryAfterMs: 3_585_000,
      rateLimit: { limit: 0, remaining: 0 },
    });
    expect((await gate.tg.limits.admit(id, { surface: 'web' })).allowed).toBe(true);
    gate.clock.set(TEST_START + 3_600_000);
    expect((await gate.tg.limits.admit(id)).allowed).toBe(true);
  });

  it("a policy subject: the override replaces the policy's windows for it alone; reset keeps the override", async () => {
    const ip = `ip:override-${kind}-${process.pid}`;
    const other = `ip:other-${kind}-${process.pid}`;
    await gate.tg.limits.override(ip, { policy: 'signin', surface: 'attempts', windows: minute(6) });
    expect(await admitN(ip, 7, { policy: 'signin', surface: 'attempts' })).toEqual([true, true, true, true, true, true, false]);
    expect(await admitN(other, 4, { policy: 'signin', surface: 'attempts' })).toEqual([true, true, true, false]);
    await gate.tg.limits.reset(ip, { policy: 'signin', surface: 'attempts' });
    expect(await gate.tg.limits.admit(ip, { policy: 'signin', surface: 'attempts' })).toMatchObject({ allowed: true, rateLimit: { limit: 6, remaining: 5 } });
    expect(await gate.tg.limits.overrides(ip)).toEqual([
      { surface: 'attempts', policy: 'signin', windows: [{ limit: 6, windowMs: 60_000, algorithm: 'fixed' }], expiresAt: null },
    ]);
    await gate.tg.limits.override(ip, { policy: 'signin', surface: 'attempts', windows: null });
    expect(await gate.tg.limits.overrides(ip)).toEqual([]);
  });

  it('an override may have several windows, a bucket among them, and peek and usage see it', async () => {
    const id = await newAccount(gate.tg, 'small');
    await gate.tg.limits.override(id, {
      windows: [
        { limit: 2, windowMs: 1_000, algorithm: 'bucket', burst: 4 },
        { limit: 50, windowMs: 60_000 },
      ],
    });
    expect(await admitN(id, 5)).toEqual([true, true, true, true, false]);
    expect((await gate.tg.limits.peek(id)).windows).toMatchObject([
      { algorithm: 'bucket', remaining: 0 },
      { limit: 50, remaining: 46 },
    ]);
    expect((await gate.tg.usage(id)).windows).toMatchObject([{ algorithm: 'bucket' }, { limit: 50, remaining: 46 }]);
  });

  it('bad input is a typed error: no account, a surface the plan lacks, bad windows or end', async () => {
    const id = await newAccount(gate.tg, 'small');
    await expect(gate.tg.limits.override('acct_nobody_here', { windows: minute(1) })).rejects.toThrow(AccountNotFoundError);
    await expect(gate.tg.limits.override(id, { surface: 'nope', windows: minute(1) })).rejects.toThrow(InvalidInputError);
    await expect(gate.tg.limits.override(id, { windows: [] })).rejects.toThrow(InvalidInputError);
    await expect(gate.tg.limits.override(id, { windows: [{ limit: 0, windowMs: 1_000, algorithm: 'bucket' }] })).rejects.toThrow(InvalidInputError);
    await expect(gate.tg.limits.override(id, { windows: minute(1), expiresAt: -5 })).rejects.toThrow(InvalidInputError);
    await expect(gate.tg.limits.override(id, { policy: 'nope', windows: minute(1) })).rejects.toThrow(InvalidInputError);
  });
});

describe.each(backends().filter((b) => b !== 'memory'))('overrides on %s agree with the model', (kind) => {
  let redis: TestGate;
  beforeAll(async () => {
    redis = await openTollgate(kind, 'overrides-prop', { plans: PLANS, policies: POLICIES });
  });
  afterAll(() => redis.close());

  it('overrides set, changed mid-window, cleared and expired between admits', async () => {
    const action = fc.oneof(
      fc.record({ kind: fc.constant('admit' as const), cost: fc.integer({ min: 1, max: 4 }) }),
      fc.record({
        kind: fc.constant('override' as const),
        limit: fc.integer({ min: 0, max: 9 }),
        sliding: fc.boolean(),
        lasts: fc.option(fc.integer({ min: 1, max: 90_000 }), { nil: undefined }),
      }),
      fc.record({ kind: fc.constant('clear' as const) }),
      fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 40_000 }) }),
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.array(action, { minLength: 1, maxLength: 25 }), async (onPolicy, actions) => {
        run += 1;
        const memory = await openTollgate('memory', 'overrides-model', { plans: PLANS, policies: POLICIES });
        redis.clock.set(TEST_START + 11);
        memory.clock.set(TEST_START + 11);
        const subject = `ip_prop_${kind}_${process.pid}_${run}`;
        const target = onPolicy ? { policy: 'signin', surface: 'attempts' } : { surface: 'api' };
        if (!onPolicy) {
          await redis.tg.accounts.create(subject, { plan: 'small' });
          await memory.tg.accounts.create(subject, { plan: 'small' });
        }
        for (const a of actions) {
          for (const gate of [redis, memory]) {
            if (a.kind === 'wait') gate.clock.advance(a.ms);
            if (a.kind === 'clear') await gate.tg.limits.override(subject, { ...target, windows: null });
            if (a.kind === 'override') {
              const windows = [{ limit: a.limit, windowMs: 60_000, algorithm: a.sliding ? ('sliding' as const) : ('fixed' as const) }];
              await gate.tg.limits.override(subject, { ...target, windows, ...(a.lasts === undefined ? {} : { expiresAt: gate.clock.now + a.lasts }) });
            }
          }
          if (a.kind === 'admit')
            expect(await redis.tg.limits.admit(subject, { ...target, cost: a.cost })).toEqual(
              await memory.tg.limits.admit(subject, { ...target, cost: a.cost }),
            );
          expect(await redis.tg.limits.overrides(subject)).toEqual(await memory.tg.limits.overrides(subject));
        }
      }),
      { numRuns: 30 },
    );
  });
});
