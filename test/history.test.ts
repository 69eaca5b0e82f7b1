// Credits per day: credits.history(subject, { days }) -> [{ day, spent,
// refunded }] in UTC days, kept inside the credit scripts and bounded to the history.days of
// createTollgate; through both clients.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Tollgate, TollgateOptions } from '../src/index.ts';
import { InvalidInputError } from '../src/errors.ts';
import { TEST_START, backends, accountId, openTollgate, type TestGate, newAccount } from './helpers/tollgate.ts';

const DAY = 86_400_000;
/** Long enough for holds to live across the days of a test. */
const LEASE = 10 * DAY;
/** UTC midnight of TEST_START's day (TEST_START is noon). */
const DAY0 = Date.UTC(2026, 0, 15);
const day = (n: number) => DAY0 + n * DAY;

describe.each(backends())('credit history through %s', (kind) => {
  let gate: TestGate;
  let tg: Tollgate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'history', { leaseMs: LEASE });
    tg = gate.tg;
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START));

  const account = (plan = 'pro') => newAccount(tg, plan);
  /** Moves the clock to hour h (UTC) of day n. */
  const at = (n: number, hour = 12) => gate.clock.set(day(n) + hour * 3_600_000);
  async function open(id: string, items: number, optional = 0) {
    const outcome = await tg.holds.open(id, { items, perItem: { required: 1, optional } });
    if (!outcome.ok) throw new Error(outcome.reason);
    return outcome.hold;
  }

  it('a charge counts as spent on the UTC day it is made', async () => {
    const id = await account();
    expect(await tg.credits.history(id, { days: 7 })).toEqual([]);
    await tg.credits.charge(id, { required: 3 });
    await tg.credits.charge(id, { required: 1, optional: 4 });
    expect(await tg.credits.history(id, { days: 1 })).toEqual([{ day: DAY0, spent: 8, refunded: 0 }]);
  });

  it('days are UTC days: 23:59:59.999 and the next 00:00 fall on two days', async () => {
    const id = await account();
    gate.clock.set(day(1) - 1);
    await tg.credits.charge(id, { required: 2 });
    gate.clock.set(day(1));
    await tg.credits.charge(id, { required: 5 });
    expect(await tg.credits.history(id, { days: 2 })).toEqual([
      { day: day(0), spent: 2, refunded: 0 },
      { day: day(1), spent: 5, refunded: 0 },
    ]);
  });

  it("a hold's credits count as spent when settled, not when reserved", async () => {
    const id = await account();
    const hold = await open(id, 10, 1);
    expect(await tg.credits.history(id, { days: 7 })).toEqual([]);
    await tg.holds.settle(id, hold.id, { itemId: 'a', optionalSpent: 1 });
    await tg.holds.settle(id, hold.id, { itemId: 'b', failed: 'x' });
    at(1);
    await tg.holds.settle(id, hold.id, { itemId: 'c' });
    const budget = await tg.holds.openBudget(id, { amount: 6 });
    if (!budget.ok) throw new Error(budget.reason);
    await tg.holds.spend(id, budget.hold.id, { itemId: 'p1', amount: 2 });
    await tg.holds.spend(id, budget.hold.id, { itemId: 'p2', amount: 0 });
    expect(await tg.credits.history(id, { days: 7 })).toEqual([
      { day: day(0), spent: 2, refunded: 0 },
      { day: day(1), spent: 3, refunded: 0 },
    ]);
  });

  it('a refund counts on the day it is made: the last item, finish, cancel, a lapsed lease', async () => {
    const id = await account();
    const settled = await open(id, 2);
    const canceled = await open(id, 5, 1);
    const finished = await tg.holds.openBudget(id, { amount: 4 });
    const lapsed = await open(id, 3);
    if (!finished.ok) throw new Error(finished.reason);
    at(1);
    await tg.holds.settle(id, settled.id, { itemId: 'a' });
    await tg.holds.settle(id, settled.id, { itemId: 'b', failed: 'gone' });
    at(2);
    await tg.holds.settle(id, canceled.id, { itemId: 'a', optionalSpent: 1 });
    await tg.holds.cancel(id, canceled.id);
    await tg.holds.settle(id, lapsed.id, { itemId: 'a' });
    at(3);
    await tg.holds.spend(id, finished.hold.id, { itemId: 'p', amount: 1 });
    await tg.holds.finish(id, finished.hold.id);
    // The lease runs out on day 12; the hold ends when the subject is next touched, on day 13.
    at(13);
    expect(await tg.holds.get(id, lapsed.id)).toMatchObject({ endReason: 'lease_expired', refunded: 2 });
    expect(await tg.credits.history(id, { days: 14 })).toEqual([
      { day: day(1), spent: 1, refunded: 1 },
      { day: day(2), spent: 3, refunded: 8 },
      { day: day(3), spent: 1, refunded: 3 },
      { day: day(13), spent: 0, refunded: 2 },
    ]);
  });

  it('a refund to an ended cycle counts on the day it is made, though no balance rises', async () => {
    const id = await account();
    const hold = await open(id, 10);
    await tg.holds.settle(id, hold.id, { itemId: 'a' });
    await tg.accounts.startCycle(id);
    at(0, 13);
    expect(await tg.holds.cancel(id, hold.id)).toMatchObject({ hold: { refundedToEndedCycle: 9 } });
    expect(await tg.credits.history(id, { days: 1 })).toEqual([{ day: DAY0, spent: 1, refunded: 9 }]);
  });

  it('days without a movement are left out, oldest first; { days } reaches back that many days, today included', async () => {
    const id = await account();
    for (const n of [0, 2, 5]) {
      at(n);
      await tg.credits.charge(id, { required: n + 1 });
    }
    expect(await tg.credits.history(id, { days: 1 })).toEqual([{ day: day(5), spent: 6, refunded: 0 }]);
    expect(await tg.credits.history(id, { days: 4 })).toEqual([
      { day: day(2), spent: 3, refunded: 0 },
      { day: day(5), spent: 6, refunded: 0 },
    ]);
    expect((await tg.credits.history(id, { days: 6 })).map((d) => d.day)).toEqual([day(0), day(2), day(5)]);
  });

  it('a charge replayed under its operation id counts once; a refused charge counts nothing', async () => {
    const id = await account('free');
    await tg.credits.charge(id, { required: 20, operationId: 'op-1' });
    await tg.credits.charge(id, { required: 20, operationId: 'op-1' });
    expect(await tg.credits.charge(id, { required: 11 })).toMatchObject({ ok: false });
    expect(await tg.credits.history(id, { days: 1 })).toEqual([{ day: DAY0, spent: 20, refunded: 0 }]);
  });

  it("the days of a cycle add up to the cycle's spent", async () => {
    const id = await account();
    const hold = await open(id, 30, 1);
    for (let n = 0; n < 6; n++) {
      at(n);
      await tg.credits.charge(id, { required: 1, optional: n });
      await tg.holds.settle(id, hold.id, { itemId: `i${n}`, optionalSpent: n % 2 });
    }
    await tg.holds.cancel(id, hold.id);
    const history = await tg.credits.history(id, { days: 30 });
    const { credits } = await tg.usage(id);
    expect(history.reduce((sum, d) => sum + d.spent, 0)).toBe(credits.spent);
    expect(history.reduce((sum, d) => sum + d.refunded, 0)).toBe((await tg.holds.get(id, hold.id)).refunded);
  });

  it('without { days }, the last 30 days', async () => {
    at(-30);
    const id = await account();
    await tg.credits.charge(id, { required: 1 });
    at(-29);
    await tg.credits.charge(id, { required: 2 });
    at(0);
    expect((await tg.credits.history(id)).map((d) => d.day)).toEqual([day(-29)]);
  });

  it('days outside 1..history.days are an InvalidInputError before Redis is touched', async () => {
    const id = await account();
    for (const days of [0, -1, 1.5, 93]) {
      await expect(tg.credits.history(id, { days }), String(days)).rejects.toBeInstanceOf(InvalidInputError);
    }
    expect(await tg.credits.history(id, { days: 92 })).toEqual([]);
  });
});

describe.each(backends())('history bounds through %s', (kind) => {
  async function withGate(options: Partial<TollgateOptions>, run: (gate: TestGate) => Promise<void>) {
    const gate = await openTollgate(kind, 'history-bound', { leaseMs: LEASE, ...options });
    try {
      await run(gate);
    } finally {
      await gate.close();
    }
  }

  it("kept for history.days: a new day's first movement drops the older days, so the stored hash stays bounded", () =>
    withGate({ history: { days: 3 } }, async (gate) => {
      const { tg } = gate;
      const id = accountId();
      await tg.accounts.create(id, { plan: 'pro' });
      const key = `${gate.prefix}:{${id}}:d`;
      for (let n = 0; n < 10; n++) {
        gate.clock.set(day(n) + 3_600_000);
        await tg.credits.charge(id, { required: 1 });
        const hold = await tg.holds.open(id, { items: 2, perItem: { required: 1 } });
        if (!hold.ok) throw new Error(hold.reason);
        await tg.holds.cancel(id, hold.hold.id);
        // A spent and a refunded field per day, for the kept days only.
        if (gate.onRedis) expect(Number(await gate.command(['HLEN', key])), `day ${n}`).toBeLessThanOrEqual(2 * 3);
      }
      if (gate.onRedis) {
        const fields = ((await gate.command(['HKEYS', key])) as string[]).sort();
        const dayNumber = (n: number) => day(n) / DAY;
        expect(fields).toEqual([7, 8, 9].flatMap((n) => [`${dayNumber(n)}r`, `${dayNumber(n)}s`]).sort());
      }
      expect(await tg.credits.history(id, { days: 3 })).toEqual([7, 8, 9].map((n) => ({ day: day(n), spent: 1, refunded: 2 })));
      await expect(tg.credits.history(id, { days: 4 })).rejects.toBeInstanceOf(InvalidInputError);
      // Fewer days kept than the default 30: without { days }, every kept day.
      expect(await tg.credits.history(id)).toHaveLength(3);
    }));

  it('history: false keeps nothing', () =>
    withGate({ history: false }, async (gate) => {
      const { tg } = gate;
      const id = accountId();
      await tg.accounts.create(id, { plan: 'pro' });
      await tg.credits.charge(id, { required: 2 });
      const hold = await tg.holds.open(id, { items: 3, perItem: { required: 1 } });
      if (!hold.ok) throw new Error(hold.reason);
      await tg.holds.settle(id, hold.hold.id, { itemId: 'a' });
      await tg.holds.cancel(id, hold.hold.id);
      if (gate.onRedis) expect(await gate.command(['EXISTS', `${gate.prefix}:{${id}}:d`])).toBe(0);
      expect(await tg.credits.history(id)).toEqual([]);
      expect((await tg.usage(id)).credits).toMatchObject({ spent: 3, balance: 4997 });
    }));
});
