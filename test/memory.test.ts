// The tollgate in memory (createTollgate with `memory: true`): how it is made, what it refuses,
// what it shares (nothing), that it stays bounded, and the local limiter made from the same
// tables. Its rules are the shared suites' (they run on memory too) and the property tests'.
import { describe, expect, it } from 'vitest';
import { createTollgate, fromNodeRedis, type PlanTable } from '../src/index.ts';
import { InvalidInputError } from '../src/errors.ts';
import { createLocalLimiter } from '../src/memory.ts';
import { TollgateModel } from '../src/model/index.ts';
import { ManualClock, TEST_START } from './helpers/tollgate.ts';

const PLANS: PlanTable = {
  basic: {
    limits: {
      api: [
        { limit: 10, windowMs: 60_000 },
        { limit: 100, windowMs: 3_600_000, algorithm: 'sliding' },
      ],
    },
    credits: { allowance: 50, cycle: { months: 1 } },
    holds: { cap: 1, maxItems: 10, surfaces: ['api'] },
  },
};
const POLICIES = { signin: { web: [{ limit: 5, windowMs: 60_000 }] } };
const redis = fromNodeRedis({ sendCommand: async () => [] });

describe('createTollgate with memory: true', () => {
  it('takes exactly one of redis and memory', () => {
    expect(() => createTollgate({ memory: true, redis, plans: PLANS })).toThrowError(new InvalidInputError('Give redis or memory: true, not both'));
    expect(() => createTollgate({ plans: PLANS })).toThrowError(/needs redis: fromNodeRedis\(client\) or fromIoredis\(client\), or memory: true/);
    expect(() => createTollgate({ memory: 'yes' as unknown as boolean, plans: PLANS })).toThrowError(/memory must be true/);
    // memory: false is the same as leaving it out.
    expect(createTollgate({ memory: false, redis, plans: PLANS }).plans).toHaveProperty('basic');
  });

  it.each([
    ['prefix', 'tg'],
    ['durability', { replicas: 1 }],
    ['scripts', 'eval'],
    ['denyCache', true],
    ['timeoutMs', 100],
    ['telemetry', false],
    ['resendIds', false],
    ['acceptEviction', true],
  ])('refuses %s, which means something on Redis only, naming it', (name, value) => {
    expect(() => createTollgate({ memory: true, plans: PLANS, [name]: value })).toThrowError(
      new InvalidInputError(`${name} means something on Redis only: a tollgate with memory: true takes none`),
    );
  });

  it('checks the options it takes as on Redis', () => {
    expect(() => createTollgate({ memory: true, plans: { bad: { ...PLANS.basic!, credits: { allowance: -1, cycle: { months: 1 } } } } })).toThrowError(
      InvalidInputError,
    );
    expect(() => createTollgate({ memory: true, plans: PLANS, leaseMs: 0 })).toThrowError(/^leaseMs must be a whole number 1..5356800000/);
    expect(() => createTollgate({ memory: true, plans: PLANS, keys: { maxKeys: 0 } })).toThrowError(/^keys\.maxKeys must be a whole number 1\.\.49/);
    expect(() => createTollgate({ memory: true, plans: PLANS, journal: { maxEntries: 0 } })).toThrowError(/^journal\.maxEntries must be a whole number >= 1/);
  });

  it('answers bad input with a rejected promise, as the Redis tollgate does, never a throw', async () => {
    const tg = createTollgate({ memory: true, plans: PLANS });
    let pending: Promise<unknown> | undefined;
    expect(() => (pending = tg.limits.admit('a{b}'))).not.toThrow();
    await expect(pending).rejects.toBeInstanceOf(InvalidInputError);
  });

  it('reads Date.now without a clock', async () => {
    const tg = createTollgate({ memory: true, plans: PLANS });
    const before = Date.now();
    const { cycle } = await tg.accounts.create('acct_1', { plan: 'basic' });
    expect(cycle.start).toBeGreaterThanOrEqual(before);
    expect(cycle.start).toBeLessThanOrEqual(Date.now());
  });

  it('shares nothing between two tollgates: each is its own store, empty when made', async () => {
    const clock = new ManualClock();
    const one = createTollgate({ memory: true, plans: PLANS, clock: clock.fn });
    const two = createTollgate({ memory: true, plans: PLANS, clock: clock.fn });
    await one.accounts.create('acct_1', { plan: 'basic' });
    await one.credits.charge('acct_1', { required: 5 });
    await expect(two.usage('acct_1')).rejects.toMatchObject({ name: 'AccountNotFoundError' });
    await two.accounts.create('acct_1', { plan: 'basic' });
    expect((await two.usage('acct_1')).credits.balance).toBe(50);
    expect((await one.usage('acct_1')).credits.balance).toBe(45);
    await one.close();
  });
});

describe('memory stays bounded', () => {
  it('drops the counts no read can reach: 10,000 policy subjects over 100 s hold a few seconds of them, an account one slot per window', () => {
    const clock = new ManualClock();
    const model = new TollgateModel({ plans: PLANS, policies: { burst: { api: [{ limit: 5, windowMs: 1_000 }] } }, clock: clock.fn });
    let most = 0;
    for (let second = 0; second < 100; second++) {
      for (let i = 0; i < 100; i++) expect(model.limits.admit(`ip:${second}.${i}`, { policy: 'burst' }).allowed).toBe(true);
      most = Math.max(most, model.counters.size);
      clock.advance(1_000);
    }
    // A subject's counts are kept until no read can reach them (three of its windows at most)
    // and each new subject drops up to two expired ones: a few seconds' subjects are held,
    // never the 10,000 counted in all.
    expect(most).toBeLessThanOrEqual(600);
    expect(model.counters.size).toBeGreaterThanOrEqual(100);
    // An account keeps one slot per window length, however many windows went by.
    model.accounts.create('acct_1', { plan: 'basic' });
    for (let minute = 0; minute < 100; minute++) {
      model.limits.admit('acct_1');
      clock.advance(60_000);
    }
    expect(
      model.state
        .get('acct_1')!
        .windows.get('api')!
        .map((slot) => slot.windowMs),
    ).toEqual([60_000, 3_600_000]);
  });

  it('forgets operation ids after operationTtlMs and Idempotency-Keys after idempotencyTtlMs, by its clock', async () => {
    const clock = new ManualClock(TEST_START);
    const tg = createTollgate({ memory: true, plans: PLANS, clock: clock.fn, operationTtlMs: 60_000, idempotencyTtlMs: 60_000 });
    await tg.accounts.create('acct_1', { plan: 'basic' });
    expect(await tg.credits.charge('acct_1', { required: 1, operationId: 'op-1' })).toMatchObject({ replayed: false });
    clock.advance(59_999);
    expect(await tg.credits.charge('acct_1', { required: 1, operationId: 'op-1' })).toMatchObject({ replayed: true });
    clock.advance(1);
    expect(await tg.credits.charge('acct_1', { required: 1, operationId: 'op-1' })).toMatchObject({ replayed: false, balance: 48 });
    const opened = await tg.holds.open('acct_1', { items: 1, perItem: { required: 1 }, idempotency: { key: 'k', body: {} } });
    expect(opened.ok).toBe(true);
    clock.advance(60_000);
    expect((await tg.idempotency.begin('acct_1', 'k', {})).state).toBe('new');
  });
});

describe('the local limiter', () => {
  it('limits on the same plans and policies with each window divided by the instances, at least 1', async () => {
    const clock = new ManualClock();
    const local = createLocalLimiter({ plans: PLANS, policies: POLICIES, clock: clock.fn, instances: 3 });
    expect(local.policies.signin!.web).toMatchObject([{ limit: 1, windowMs: 60_000 }]);
    expect(local.plans.basic!.limits.api).toMatchObject([
      { limit: 3, windowMs: 60_000 },
      { limit: 33, windowMs: 3_600_000, algorithm: 'sliding' },
    ]);
    await local.accounts.create('acct_1', { plan: 'basic' });
    for (let i = 0; i < 3; i++) expect((await local.limits.admit('acct_1')).allowed).toBe(true);
    expect(await local.limits.admit('acct_1')).toMatchObject({ ok: false, allowed: false, reason: 'rate_limited', rateLimit: { limit: 3, remaining: 0 } });
    expect((await local.limits.admit('ip:1', { policy: 'signin', surface: 'web' })).allowed).toBe(true);
    expect((await local.limits.admit('ip:1', { policy: 'signin', surface: 'web' })).allowed).toBe(false);
    expect(() => createLocalLimiter({ plans: PLANS, instances: 0 })).toThrowError(/^instances must be a whole number >= 1/);
  });
});
