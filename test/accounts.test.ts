// Accounts, plans and billing cycles (SPEC §2-3), through both clients.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AccountExistsError, AccountNotFoundError, createTollgate, fromNodeRedis, InvalidInputError, UnknownPlanError, validatePlans, DEFAULT_PLANS } from '../src/index.ts';
import { CLIENT_KINDS, TEST_START, accountId, openTollgate, type TestGate } from './helpers/tollgate.ts';

const DAY = 86_400_000;

describe.each(CLIENT_KINDS)('accounts and cycles through %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'accounts');
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START));

  it('a new account starts its first cycle with the plan allowance as balance', async () => {
    const id = accountId();
    const created = await gate.tg.accounts.create(id, { plan: 'starter' });
    expect(created.cycle).toEqual({ id: 1, start: gate.clock.now, end: Date.UTC(2026, 1, 15, 12) });
    const usage = await gate.tg.usage(id);
    expect(usage.credits).toEqual({ allowance: 1000, balance: 1000, spent: 0, held: 0, nextAllowance: 1000 });
    expect(usage.rateLimit).toMatchObject({ limit: 100, remaining: 100 });
    expect(usage.jobs).toEqual({ active: 0, cap: 2, maxVideos: 5000, bulkOnApi: true });
  });

  it('creating an account twice throws AccountExistsError and keeps the first', async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'free' });
    await expect(gate.tg.accounts.create(id, { plan: 'pro' })).rejects.toBeInstanceOf(AccountExistsError);
    expect((await gate.tg.usage(id)).plan).toBe('free');
  });

  it('free accounts get 30-day cycles counted from signup', async () => {
    const id = accountId();
    const signup = gate.clock.now - 45 * DAY;
    const created = await gate.tg.accounts.create(id, { plan: 'free', signupAt: signup });
    expect(created.cycle).toEqual({ id: 1, start: signup + 30 * DAY, end: signup + 60 * DAY });
  });

  it('rollover is lazy: the first touch after the cycle end archives it and grants the allowance; unused credits do not roll over', async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'free' });
    await gate.tg.credits.charge(id, { required: 7 });
    gate.clock.advance(30 * DAY);
    const usage = await gate.tg.usage(id);
    expect(usage.credits).toMatchObject({ allowance: 30, balance: 30, spent: 0, held: 0 });
    expect(usage.cycle.id).toBe(2);
    const [ended] = await gate.tg.accounts.endedCycles(id);
    expect(ended).toMatchObject({ id: 1, allowance: 30, unused: 23, spent: 7, held: 0, refunded: 0 });
  });

  it('an idle account skips whole cycles and lands in the one containing now', async () => {
    const id = accountId();
    const start = gate.clock.now;
    await gate.tg.accounts.create(id, { plan: 'free' });
    gate.clock.advance(100 * DAY);
    const usage = await gate.tg.usage(id);
    expect(usage.cycle).toEqual({ id: 2, start: start + 90 * DAY, end: start + 120 * DAY });
  });

  it('paid subscriptions use calendar months from the anchor, clamped to month end', async () => {
    const id = accountId();
    gate.clock.set(Date.UTC(2026, 0, 31, 8));
    await gate.tg.accounts.create(id, { plan: 'pro', cycle: { anchor: Date.UTC(2026, 0, 31, 8), every: { months: 1 } } });
    gate.clock.set(Date.UTC(2026, 1, 28, 8));
    expect((await gate.tg.usage(id)).cycle).toEqual({ id: 2, start: Date.UTC(2026, 1, 28, 8), end: Date.UTC(2026, 2, 31, 8) });
  });

  it('starting a new cycle now re-anchors the account at this instant with a fresh allowance', async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'starter' });
    await gate.tg.credits.charge(id, { required: 400 });
    gate.clock.advance(3 * DAY);
    const cycle = await gate.tg.accounts.startCycle(id);
    expect(cycle).toEqual({ id: 2, start: gate.clock.now, end: Date.UTC(2026, 1, 18, 12) });
    expect((await gate.tg.usage(id)).credits).toMatchObject({ balance: 1000, spent: 0 });
    expect((await gate.tg.accounts.endedCycles(id))[0]).toMatchObject({ unused: 600, spent: 400 });
  });

  it('a plan change applies the request budget and job cap at once and the allowance from the next cycle', async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'starter' });
    await gate.tg.accounts.changePlan(id, 'pro');
    let usage = await gate.tg.usage(id);
    expect(usage.plan).toBe('pro');
    expect(usage.rateLimit.limit).toBe(300);
    expect(usage.jobs.cap).toBe(5);
    expect(usage.credits).toMatchObject({ allowance: 1000, balance: 1000, nextAllowance: 5000 });
    gate.clock.advance(32 * DAY);
    usage = await gate.tg.usage(id);
    expect(usage.credits).toMatchObject({ allowance: 5000, balance: 5000 });
  });

  it('a plan change with startNewCycle applies the new allowance now', async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'free' });
    await gate.tg.accounts.changePlan(id, 'business', { startNewCycle: true, every: { months: 1 } });
    const usage = await gate.tg.usage(id);
    expect(usage.credits).toMatchObject({ allowance: 20000, balance: 20000 });
    expect(usage.cycle).toMatchObject({ id: 2, start: gate.clock.now });
  });

  it('operations on a missing account throw AccountNotFoundError', async () => {
    await expect(gate.tg.usage(accountId('missing'))).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(gate.tg.limits.admit(accountId('missing'))).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(gate.tg.credits.charge(accountId('missing'), { required: 1 })).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(gate.tg.accounts.startCycle(accountId('missing'))).rejects.toBeInstanceOf(AccountNotFoundError);
  });

  it('an unknown plan throws UnknownPlanError before Redis is touched', async () => {
    await expect(gate.tg.accounts.create(accountId(), { plan: 'platinum' })).rejects.toBeInstanceOf(UnknownPlanError);
  });
});

describe('plan tables (SPEC §2)', () => {
  it('the default preset is the seed table', () => {
    expect(DEFAULT_PLANS.free).toMatchObject({ requestsPerMinute: 30, creditsPerCycle: 30, bulkJobs: false, activeJobCap: 1, maxVideosPerJob: 5000 });
    expect(DEFAULT_PLANS.starter).toMatchObject({ requestsPerMinute: 100, creditsPerCycle: 1000, bulkJobs: true, activeJobCap: 2 });
    expect(DEFAULT_PLANS.pro).toMatchObject({ requestsPerMinute: 300, creditsPerCycle: 5000, activeJobCap: 5 });
    expect(DEFAULT_PLANS.business).toMatchObject({ requestsPerMinute: 1000, creditsPerCycle: 20000, activeJobCap: 10 });
  });

  it('a host table is validated at start-up with a message naming the bad field', () => {
    const bad = { gold: { ...DEFAULT_PLANS.pro, requestsPerMinute: 0 } };
    expect(() => validatePlans(bad)).toThrowError(/gold.*requestsPerMinute/);
    expect(() => validatePlans({ gold: { ...DEFAULT_PLANS.pro, creditsPerCycle: 1.5 } })).toThrowError(InvalidInputError);
    expect(() => validatePlans({ gold: { ...DEFAULT_PLANS.pro, cycle: { weeks: 1 } } })).toThrowError(/days: n.*months: n/);
    expect(() => validatePlans({})).toThrowError(/at least one plan/);
    const redis = fromNodeRedis({ evalSha: async () => [], eval: async () => [] });
    expect(() => createTollgate({ redis, plans: bad })).toThrowError(InvalidInputError);
  });

  it('the web budget defaults to the api budget', () => {
    expect(validatePlans({ p: { ...DEFAULT_PLANS.pro } }).p!.webRequestsPerMinute).toBe(300);
  });
});
