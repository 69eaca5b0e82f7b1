// Accounts, plans and billing cycles (docs/concepts.md#plans, docs/accounts.md#billing-cycles), through both clients.
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { createTollgate, fromNodeRedis, type PlanTable, type Tollgate } from '../src/index.ts';
import { AccountExistsError, AccountNotFoundError, InvalidInputError, UnknownPlanError } from '../src/errors.ts';
import { validatePlans } from '../src/rules/plans.ts';
import { SubjectKeys } from '../src/redisKeys.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { checkInvariants } from '../src/model/index.ts';
import { TEST_START, backends, accountId, connectTestClient, openTollgate, type ClientKind, type TestGate, newAccount } from './helpers/tollgate.ts';

const DAY = 86_400_000;

/** A host's own table: surfaces of its naming, several windows, weekly cycles. */
const HOST_PLANS = {
  basic: {
    limits: {
      api: [
        { limit: 5, windowMs: 1_000 },
        { limit: 100, windowMs: 3_600_000, algorithm: 'sliding' },
      ],
      batch: [{ limit: 2, windowMs: 60_000 }],
    },
    credits: { allowance: 50, cycle: { days: 7 } },
    holds: { cap: 1, maxItems: 10, surfaces: ['batch'] },
  },
  plus: {
    limits: { api: [{ limit: 50, windowMs: 1_000 }] },
    credits: { allowance: 500, cycle: { days: 7 } },
    holds: { cap: 3, maxItems: 100, surfaces: ['api'] },
  },
} satisfies PlanTable;

describe.each(backends())('accounts and cycles on %s', (kind) => {
  let gate: TestGate;
  let tg: Tollgate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'accounts');
    tg = gate.tg;
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START));

  const account = (plan: string) => newAccount(tg, plan);
  /** A tollgate with a plan table of the host's, on this file's Redis and prefix (or in memory, of its own). */
  async function hostGate(plans: PlanTable): Promise<Tollgate> {
    if (kind === 'memory') return createTollgate({ memory: true, clock: gate.clock.fn, plans });
    const client = await connectTestClient(kind);
    onTestFinished(() => client.close());
    return createTollgate({ redis: client.adapter, prefix: gate.prefix, clock: gate.clock.fn, plans });
  }

  it('a new account starts its first cycle with the plan allowance as balance', async () => {
    const id = accountId();
    const created = await tg.accounts.create(id, { plan: 'starter' });
    expect(created).toEqual({ subject: id, plan: 'starter', cycle: { id: 1, start: gate.clock.now, end: Date.UTC(2026, 1, 15, 12) } });
    const usage = await tg.usage(id);
    expect(usage.credits).toEqual({ allowance: 1000, balance: 1000, spent: 0, held: 0, nextAllowance: 1000, available: 1000, nextExpiry: null });
    expect(usage.rateLimit).toMatchObject({ limit: 100, remaining: 100 });
    expect(usage.holds).toEqual({ active: 0, cap: 2, maxItems: 5000, surfaces: ['api', 'web'] });
  });

  it("accounts.limits returns the plan's numbers as the account holds them", async () => {
    const id = await account('pro');
    expect(await tg.accounts.limits(id)).toEqual({
      name: 'pro',
      limits: { api: [{ limit: 300, windowMs: 60_000, algorithm: 'fixed' }], web: [{ limit: 300, windowMs: 60_000, algorithm: 'fixed' }] },
      credits: { allowance: 5000 },
      holds: { cap: 5, maxItems: 5000, surfaces: ['api', 'web'] },
    });
    // A read of the plan: it counts no request.
    expect((await tg.usage(id)).rateLimit.remaining).toBe(300);
    await expect(tg.accounts.limits(accountId('missing'))).rejects.toBeInstanceOf(AccountNotFoundError);
  });

  it("the plan's shape is copied onto the account: a host's surfaces, windows and holds rules", async () => {
    const host = await hostGate(HOST_PLANS);
    const id = accountId();
    await host.accounts.create(id, { plan: 'basic' });
    expect(await host.accounts.limits(id)).toEqual({
      name: 'basic',
      limits: {
        api: [
          { limit: 5, windowMs: 1_000, algorithm: 'fixed' },
          { limit: 100, windowMs: 3_600_000, algorithm: 'sliding' },
        ],
        batch: [{ limit: 2, windowMs: 60_000, algorithm: 'fixed' }],
      },
      credits: { allowance: 50 },
      holds: { cap: 1, maxItems: 10, surfaces: ['batch'] },
    });
    expect((await host.usage(id, { surface: 'batch' })).rateLimit).toMatchObject({ limit: 2, surface: 'batch' });
    expect(await host.holds.open(id, { items: 11, perItem: { required: 1 }, surface: 'batch' })).toEqual({ ok: false, reason: 'too_many_items', max: 10 });
    expect(await host.holds.open(id, { items: 1, perItem: { required: 1 } })).toMatchObject({ ok: false, reason: 'surface_not_allowed', allowed: ['batch'] });
  });

  // Two tables on one store: memory has no store that outlives its tollgate.
  it.skipIf(kind === 'memory')(
    'the copy stays the account\'s until its next admit under a new plan table, which refreshes it (docs/limits.md, "Plan edits")',
    async () => {
      const before = await hostGate(HOST_PLANS);
      const id = accountId();
      await before.accounts.create(id, { plan: 'plus' });
      // The host deploys a table where "plus" has other numbers.
      const after = await hostGate({
        ...HOST_PLANS,
        plus: { ...HOST_PLANS.plus, limits: { api: [{ limit: 80, windowMs: 1_000 }] }, holds: { cap: 4, maxItems: 100, surfaces: ['api'] } },
      });
      expect(await after.accounts.limits(id)).toMatchObject({ limits: { api: [{ limit: 50 }] }, holds: { cap: 3 } });
      expect((await after.limits.admit(id)).rateLimit.limit).toBe(80);
      expect(await after.accounts.limits(id)).toMatchObject({ limits: { api: [{ limit: 80 }] }, holds: { cap: 4 } });
    },
  );

  it('a plan change moves the windows and holds rules at once, and the allowance from the next cycle', async () => {
    const id = await account('starter');
    await tg.accounts.changePlan(id, 'pro');
    let usage = await tg.usage(id);
    expect(usage.plan).toBe('pro');
    expect(usage.rateLimit.limit).toBe(300);
    expect(usage.holds).toMatchObject({ cap: 5 });
    expect(usage.credits).toMatchObject({ allowance: 1000, balance: 1000, nextAllowance: 5000 });
    expect((await tg.accounts.limits(id)).credits.allowance).toBe(5000);
    gate.clock.advance(32 * DAY);
    usage = await tg.usage(id);
    expect(usage.credits).toMatchObject({ allowance: 5000, balance: 5000, nextAllowance: 5000 });
    expect(usage.cycle.id).toBe(2);
  });

  it('a plan change applies the new cap and holds surfaces to the next open; open holds keep running', async () => {
    const id = await account('starter');
    const a = await tg.holds.open(id, { items: 2, perItem: { required: 1 } });
    await tg.holds.open(id, { items: 2, perItem: { required: 1 }, surface: 'web' });
    await tg.accounts.changePlan(id, 'free');
    expect(await tg.holds.open(id, { items: 1, perItem: { required: 1 } })).toMatchObject({ ok: false, reason: 'surface_not_allowed', allowed: ['web'] });
    expect(await tg.holds.openBudget(id, { amount: 1, surface: 'web' })).toMatchObject({ ok: false, reason: 'hold_limit_reached', active: 2, cap: 1 });
    if (!a.ok) throw new Error(a.reason);
    expect(await tg.holds.settle(id, a.hold.id, { itemId: 'x' })).toMatchObject({ ok: true, accepted: true });
    expect((await tg.usage(id)).credits).toMatchObject({ allowance: 1000, spent: 1, held: 3 });
  });

  it('surfaces the new plan does not have are removed from the account', async () => {
    const host = await hostGate(HOST_PLANS);
    const id = accountId();
    await host.accounts.create(id, { plan: 'basic' });
    await host.accounts.changePlan(id, 'plus');
    expect(Object.keys((await host.accounts.limits(id)).limits)).toEqual(['api']);
    await expect(host.usage(id, { surface: 'batch' })).rejects.toBeInstanceOf(InvalidInputError);
  });

  it('a plan change with startNewCycle applies the new allowance now', async () => {
    const id = await account('free');
    await tg.credits.charge(id, { required: 10 });
    const cycle = await tg.accounts.changePlan(id, 'business', { startNewCycle: true, every: { months: 1 } });
    expect(cycle).toEqual({ id: 2, start: gate.clock.now, end: Date.UTC(2026, 1, 15, 12) });
    const usage = await tg.usage(id);
    expect(usage.credits).toMatchObject({ allowance: 20000, balance: 20000, spent: 0 });
    expect((await tg.accounts.endedCycles(id))[0]).toMatchObject({ id: 1, allowance: 30, spent: 10, unused: 20 });
  });

  it('creating an account twice throws AccountExistsError and keeps the first', async () => {
    const id = await account('free');
    await tg.credits.charge(id, { required: 4 });
    await expect(tg.accounts.create(id, { plan: 'pro' })).rejects.toBeInstanceOf(AccountExistsError);
    await expect(tg.accounts.create(id, { plan: 'pro' })).rejects.toMatchObject({ name: 'AccountExistsError', code: 'account_exists', accountId: id });
    expect(await tg.usage(id)).toMatchObject({ plan: 'free', credits: { balance: 26 } });
  });

  // Redis evicts keys; memory loses nothing.
  it.skipIf(kind === 'memory')(
    'an account that is gone while its records survive (journal, ended cycles, holds: an eviction) is not created again from scratch',
    async () => {
      const accountKey = (id: string) => new SubjectKeys(gate.prefix, id).account;
      const lose = async (id: string) => expect(await gate.command(['DEL', accountKey(id)])).toBe(1);
      // Its credit journal survives.
      const journaled = await account('pro');
      await tg.credits.charge(journaled, { required: 7 });
      await lose(journaled);
      await expect(tg.accounts.create(journaled, { plan: 'pro' })).rejects.toMatchObject({
        name: 'AccountExistsError',
        code: 'account_exists',
        accountId: journaled,
        found: 'journal',
      });
      expect(await gate.command(['EXISTS', accountKey(journaled)])).toBe(0);
      // Without a journal: its ended cycles, or its holds.
      const client = await connectTestClient(kind as ClientKind);
      onTestFinished(() => client.close());
      const unjournaled = createTollgate({ redis: client.adapter, prefix: gate.prefix, clock: gate.clock.fn, plans: EXAMPLE_PLANS, journal: false });
      const cycled = await newAccount(unjournaled, 'pro');
      await unjournaled.accounts.startCycle(cycled);
      await lose(cycled);
      await expect(unjournaled.accounts.create(cycled, { plan: 'pro' })).rejects.toMatchObject({ code: 'account_exists', found: 'cycles' });
      const holding = await newAccount(unjournaled, 'pro');
      expect(await unjournaled.holds.open(holding, { items: 3, perItem: { required: 1 } })).toMatchObject({ ok: true });
      await lose(holding);
      const refusal = await unjournaled.accounts.create(holding, { plan: 'pro' }).catch((error: unknown) => error);
      expect(refusal).toMatchObject({ code: 'account_exists', found: 'holds' });
      expect((refusal as Error).message).toMatch(/is gone but its holds survive/);
      expect(await gate.command(['EXISTS', accountKey(holding)])).toBe(0);
    },
  );

  it('free accounts get 30-day cycles counted from signup', async () => {
    const id = accountId();
    const signup = gate.clock.now - 45 * DAY;
    const created = await tg.accounts.create(id, { plan: 'free', signupAt: signup });
    expect(created.cycle).toEqual({ id: 1, start: signup + 30 * DAY, end: signup + 60 * DAY });
  });

  it('rollover is lazy: the first touch after the cycle end archives it and grants the allowance; unused credits do not roll over', async () => {
    const id = await account('free');
    await tg.credits.charge(id, { required: 7 });
    gate.clock.advance(30 * DAY - 1);
    expect((await tg.usage(id)).cycle.id).toBe(1);
    expect(await tg.accounts.endedCycles(id)).toEqual([]);
    gate.clock.advance(1);
    const usage = await tg.usage(id);
    expect(usage.credits).toMatchObject({ allowance: 30, balance: 30, spent: 0, held: 0 });
    expect(usage.cycle).toEqual({ id: 2, start: TEST_START + 30 * DAY, end: TEST_START + 60 * DAY });
    expect(await tg.accounts.endedCycles(id)).toEqual([
      { id: 1, start: TEST_START, end: TEST_START + 30 * DAY, plannedEnd: TEST_START + 30 * DAY, allowance: 30, unused: 23, spent: 7, held: 0, refunded: 0 },
    ]);
  });

  it('ended cycles are kept as summaries, oldest first, each with what its open holds still hold until they end', async () => {
    const id = await account('free');
    await tg.credits.charge(id, { required: 5 });
    gate.clock.advance(30 * DAY);
    const hold = await tg.holds.openBudget(id, { amount: 8, surface: 'web' });
    if (!hold.ok) throw new Error(hold.reason);
    await tg.credits.charge(id, { required: 2 });
    gate.clock.advance(30 * DAY);
    await tg.credits.charge(id, { required: 1 });
    const summaries = async () =>
      (await tg.accounts.endedCycles(id)).map(({ id: cycle, allowance, unused, spent, held, refunded }) => ({
        cycle,
        allowance,
        unused,
        spent,
        held,
        refunded,
      }));
    expect(await summaries()).toEqual([
      { cycle: 1, allowance: 30, unused: 25, spent: 5, held: 0, refunded: 0 },
      { cycle: 2, allowance: 30, unused: 20, spent: 2, held: 8, refunded: 0 },
    ]);
    // The budget's lease ran out with the 30 days: the next read of the holds ends it, and its
    // refund goes to cycle 2's summary.
    expect(await tg.holds.get(id, hold.hold.id)).toMatchObject({ endReason: 'lease_expired', refundedToEndedCycle: 8 });
    expect((await summaries())[1]).toEqual({ cycle: 2, allowance: 30, unused: 20, spent: 2, held: 0, refunded: 8 });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 29, spent: 1, held: 0 });
  });

  it('an idle account skips whole cycles and lands in the one containing now', async () => {
    const id = await account('free');
    gate.clock.advance(100 * DAY);
    const usage = await tg.usage(id);
    expect(usage.cycle).toEqual({ id: 2, start: TEST_START + 90 * DAY, end: TEST_START + 120 * DAY });
  });

  it('paid subscriptions use calendar months from the anchor, clamped to month end', async () => {
    const id = accountId();
    gate.clock.set(Date.UTC(2026, 0, 31, 8));
    await tg.accounts.create(id, { plan: 'pro', cycle: { anchor: Date.UTC(2026, 0, 31, 8), every: { months: 1 } } });
    gate.clock.set(Date.UTC(2026, 1, 28, 8));
    expect((await tg.usage(id)).cycle).toEqual({ id: 2, start: Date.UTC(2026, 1, 28, 8), end: Date.UTC(2026, 2, 31, 8) });
  });

  it('starting a new cycle now re-anchors the account at this instant with a fresh allowance', async () => {
    const id = await account('starter');
    await tg.credits.charge(id, { required: 400 });
    gate.clock.advance(3 * DAY);
    const planned = (await tg.usage(id)).cycle.end;
    const cycle = await tg.accounts.startCycle(id);
    expect(cycle).toEqual({ id: 2, start: gate.clock.now, end: Date.UTC(2026, 1, 18, 12) });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 1000, spent: 0 });
    expect((await tg.accounts.endedCycles(id))[0]).toMatchObject({ unused: 600, spent: 400, end: gate.clock.now, plannedEnd: planned });
    expect((await tg.accounts.startCycle(id, { every: { days: 10 } })).end).toBe(gate.clock.now + 10 * DAY);
  });

  it('a new cycle started after the last one ran out ends the cycle current now: the same cycles whether or not a request came between', async () => {
    const cyclesAfter = async (touch: boolean, startNow: (id: string) => Promise<unknown>) => {
      gate.clock.set(TEST_START);
      const id = await account('free');
      gate.clock.advance(45 * DAY);
      if (touch) await tg.usage(id);
      await startNow(id);
      return { ended: await tg.accounts.endedCycles(id), current: (await tg.usage(id)).cycle };
    };
    const expected = {
      ended: [
        { id: 1, start: TEST_START, end: TEST_START + 30 * DAY, plannedEnd: TEST_START + 30 * DAY, allowance: 30, unused: 30, spent: 0, held: 0, refunded: 0 },
        {
          id: 2,
          start: TEST_START + 30 * DAY,
          end: TEST_START + 45 * DAY,
          plannedEnd: TEST_START + 60 * DAY,
          allowance: 30,
          unused: 30,
          spent: 0,
          held: 0,
          refunded: 0,
        },
      ],
      current: { id: 3, start: TEST_START + 45 * DAY, end: TEST_START + 75 * DAY },
    };
    // A billing webhook (startCycle) and a plan change that starts a cycle agree, touched or not.
    for (const touch of [false, true]) {
      expect(await cyclesAfter(touch, (id) => tg.accounts.startCycle(id))).toEqual(expected);
      expect(await cyclesAfter(touch, (id) => tg.accounts.changePlan(id, 'free', { startNewCycle: true }))).toEqual(expected);
    }
  });

  it('cycles never overlap: each ended cycle ends where the next starts, whether it ran out or a new one was started early', async () => {
    const id = await account('starter');
    gate.clock.advance(2 * DAY);
    await tg.accounts.startCycle(id);
    gate.clock.advance(40 * DAY);
    await tg.usage(id);
    gate.clock.advance(DAY);
    await tg.accounts.changePlan(id, 'pro', { startNewCycle: true });
    const ended = await tg.accounts.endedCycles(id);
    const current = (await tg.usage(id)).cycle;
    expect(ended.map((c) => c.id)).toEqual([1, 2, 3]);
    const starts = [...ended.slice(1).map((c) => c.start), current.start];
    ended.forEach((c, i) => {
      expect(c.end, `cycle ${c.id}`).toBe(starts[i]);
      expect(c.end, `cycle ${c.id}`).toBeLessThanOrEqual(c.plannedEnd);
    });
    // The first and the third were started early; the second ran out as planned.
    expect(ended.map((c) => c.end < c.plannedEnd)).toEqual([true, false, true]);
    // The model's invariants hold the rule, and catch an ended cycle that kept its planned end.
    const snapshot = await tg.accounts.inspect(id);
    expect(checkInvariants(snapshot)).toEqual([]);
    const overlapping = { ...snapshot, endedCycles: snapshot.endedCycles.map((c) => (c.id === 1 ? { ...c, end: c.plannedEnd } : c)) };
    expect(checkInvariants(overlapping).map((v) => v.rule)).toEqual(['cycles never overlap']);
  });

  it('balance + spent + held == allowance and balance >= 0 after every movement', async () => {
    const id = await account('starter');
    const steps: Array<[string, () => Promise<unknown>]> = [];
    let holdId = '';
    steps.push(['charge', () => tg.credits.charge(id, { required: 300, optional: 50 })]);
    steps.push([
      'open',
      async () => {
        const r = await tg.holds.open(id, { items: 100, perItem: { required: 2, optional: 1 } });
        if (r.ok) holdId = r.hold.id;
      },
    ]);
    steps.push(['charge beyond the balance', () => tg.credits.charge(id, { required: 400 })]);
    steps.push(['charge the rest', () => tg.credits.charge(id, { required: 1, optional: 10_000 })]);
    for (let i = 0; i < 10; i++)
      steps.push([`settle ${i}`, () => tg.holds.settle(id, holdId, i % 3 ? { itemId: `i${i}`, optionalSpent: 1 } : { itemId: `i${i}`, failed: 'x' })]);
    steps.push(['new cycle', () => tg.accounts.startCycle(id)]);
    steps.push(['settle on the ended cycle', () => tg.holds.settle(id, holdId, { itemId: 'late', optionalSpent: 1 })]);
    steps.push(['charge in the new cycle', () => tg.credits.charge(id, { required: 999 })]);
    steps.push(['cancel', () => tg.holds.cancel(id, holdId)]);
    steps.push(['plan change', () => tg.accounts.changePlan(id, 'pro')]);
    steps.push(['rollover', async () => gate.clock.advance(40 * DAY)]);
    for (const [name, step] of steps) {
      await step();
      const snapshot = await tg.accounts.inspect(id);
      const { balance, spent, held, allowance } = (await tg.usage(id)).credits;
      expect(balance + spent + held, name).toBe(allowance);
      expect(balance, name).toBeGreaterThanOrEqual(0);
      expect(checkInvariants(snapshot), name).toEqual([]);
    }
    expect((await tg.usage(id)).credits).toEqual({ allowance: 5000, balance: 5000, spent: 0, held: 0, nextAllowance: 5000, available: 5000, nextExpiry: null });
  });

  it('the largest allowance a plan may grant is stored exactly, and the invariant holds on it', async () => {
    const plans = { huge: { ...HOST_PLANS.plus, credits: { allowance: 99_999_999_999_999, cycle: { days: 7 } } } };
    const host = await hostGate(plans);
    const id = accountId();
    await host.accounts.create(id, { plan: 'huge' });
    expect(await host.credits.charge(id, { required: 1, optional: 2 })).toMatchObject({ ok: true, charged: 3, balance: 99_999_999_999_996 });
    const opened = await host.holds.open(id, { items: 3, perItem: { required: 7 } });
    expect(opened.ok).toBe(true);
    expect((await host.usage(id)).credits).toEqual({
      allowance: 99_999_999_999_999,
      balance: 99_999_999_999_975,
      spent: 3,
      held: 21,
      nextAllowance: 99_999_999_999_999,
      available: 99_999_999_999_975,
      nextExpiry: null,
    });
    expect(checkInvariants(await host.accounts.inspect(id))).toEqual([]);
  });

  it('operations on a missing account throw AccountNotFoundError', async () => {
    const missing = accountId('missing');
    await expect(tg.usage(missing)).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(tg.limits.admit(missing)).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(tg.credits.charge(missing, { required: 1 })).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(tg.accounts.startCycle(missing)).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(tg.accounts.changePlan(missing, 'pro')).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(tg.accounts.endedCycles(missing)).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(tg.accounts.inspect(missing)).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(tg.credits.reconcile(missing)).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(tg.credits.history(missing)).rejects.toBeInstanceOf(AccountNotFoundError);
    await expect(tg.holds.open(missing, { items: 1, perItem: { required: 1 } })).rejects.toMatchObject({
      name: 'AccountNotFoundError',
      code: 'account_not_found',
      accountId: missing,
    });
  });

  it('an unknown plan throws UnknownPlanError before Redis is touched', async () => {
    await expect(tg.accounts.create(accountId(), { plan: 'platinum' })).rejects.toBeInstanceOf(UnknownPlanError);
    const id = await account('free');
    await expect(tg.accounts.changePlan(id, 'platinum')).rejects.toMatchObject({ name: 'UnknownPlanError', plan: 'platinum' });
    expect((await tg.usage(id)).plan).toBe('free');
  });
});

describe('plan tables', () => {
  it("the example service's plans are the seed table: requests per minute on api and web, credits per cycle, holds cap, items and surfaces", () => {
    const row = (name: keyof typeof EXAMPLE_PLANS) => {
      const p = EXAMPLE_PLANS[name];
      return [p.limits.api[0]!.limit, p.limits.web[0]!.limit, p.credits.allowance, p.holds.cap, p.holds.maxItems, p.holds.surfaces.join('+')];
    };
    expect(row('free')).toEqual([30, 30, 30, 1, 5000, 'web']);
    expect(row('starter')).toEqual([100, 100, 1000, 2, 5000, 'api+web']);
    expect(row('pro')).toEqual([300, 300, 5000, 5, 5000, 'api+web']);
    expect(row('business')).toEqual([1000, 1000, 20000, 10, 5000, 'api+web']);
    expect(EXAMPLE_PLANS.free.credits.cycle).toEqual({ days: 30 });
    expect(EXAMPLE_PLANS.pro.credits.cycle).toEqual({ months: 1 });
    for (const plan of Object.values(EXAMPLE_PLANS))
      for (const windows of Object.values(plan.limits)) expect(windows).toEqual([{ limit: windows[0]!.limit, windowMs: 60_000 }]);
  });

  it('a host table is validated at start-up, with a message naming the plan and the field', () => {
    const pro = EXAMPLE_PLANS.pro;
    expect(() => validatePlans({ gold: { ...pro, limits: { api: [{ limit: 0, windowMs: 60_000 }] } } })).toThrowError(/gold.*limits\.api\[0\]\.limit/);
    expect(() => validatePlans({ gold: { ...pro, credits: { allowance: 1.5, cycle: { months: 1 } } } })).toThrowError(/gold.*credits\.allowance/);
    expect(() => validatePlans({ gold: { ...pro, credits: { allowance: 1, cycle: { weeks: 1 } } } })).toThrowError(/gold.*credits\.cycle.*days: n.*months: n/);
    expect(() => validatePlans({ gold: { ...pro, holds: { cap: -1, maxItems: 1, surfaces: ['api'] } } })).toThrowError(/gold.*holds\.cap/);
    expect(() => validatePlans({ gold: { ...pro, holds: { cap: 1, maxItems: 1, surfaces: ['batch'] } } })).toThrowError(/gold.*holds\.surfaces.*batch/);
    expect(() => validatePlans({})).toThrowError(/at least one plan/);
    // Beyond 14 significant digits the scripts would store a rounded balance.
    expect(() => validatePlans({ gold: { ...pro, credits: { allowance: 100_000_000_000_000, cycle: { months: 1 } } } })).toThrowError(
      /gold.*credits\.allowance.*0\.\.99999999999999/,
    );
    const redis = fromNodeRedis({ sendCommand: async () => [] });
    expect(() => createTollgate({ redis, plans: { gold: { ...pro, credits: { allowance: -1, cycle: { months: 1 } } } } })).toThrowError(InvalidInputError);
  });
});
