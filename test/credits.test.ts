// Charges (docs/credits.md#charges), operation ids, the race for the last credits, and the journal.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../src/errors.ts';
import { TEST_START, backends, accountId, openTollgate, type TestGate, newAccount } from './helpers/tollgate.ts';

describe.each(backends())('charges on %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'credits');
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START));

  const account = (plan = 'free') => newAccount(gate.tg, plan);

  it('takes required + min(optional, balance - required)', async () => {
    const id = await account();
    expect(await gate.tg.credits.charge(id, { required: 1, optional: 1 })).toEqual({
      ok: true,
      charged: 2,
      balance: 28,
      available: 28,
      sources: [{ grantId: 'cycle:1', amount: 2 }],
      replayed: false,
    });
    await gate.tg.credits.charge(id, { required: 27 });
    expect(await gate.tg.credits.charge(id, { required: 1, optional: 1 })).toEqual({
      ok: true,
      charged: 1,
      balance: 0,
      available: 0,
      sources: [{ grantId: 'cycle:1', amount: 1 }],
      replayed: false,
    });
  });

  it('an insufficient charge is a value with remaining and needed, and takes nothing', async () => {
    const id = await account();
    await gate.tg.credits.charge(id, { required: 29 });
    expect(await gate.tg.credits.charge(id, { required: 2, optional: 5 })).toEqual({
      ok: false,
      reason: 'insufficient',
      balance: 1,
      remaining: 1,
      needed: 2,
      available: 1,
    });
    expect((await gate.tg.usage(id)).credits).toMatchObject({ balance: 1, spent: 29 });
  });

  it('a retried charge with the same operation id is applied once', async () => {
    const id = await account();
    const first = await gate.tg.credits.charge(id, { required: 1, optional: 1, operationId: 'req_1:item' });
    const again = await gate.tg.credits.charge(id, { required: 1, optional: 1, operationId: 'req_1:item' });
    expect(first).toEqual({ ok: true, charged: 2, balance: 28, available: 28, sources: [{ grantId: 'cycle:1', amount: 2 }], replayed: false });
    expect(again).toEqual({ ok: true, charged: 2, balance: 28, available: 28, sources: [{ grantId: 'cycle:1', amount: 2 }], replayed: true });
    expect((await gate.tg.usage(id)).credits).toMatchObject({ balance: 28, spent: 2 });
    // Operation ids are the subject's own: another subject may use the same one.
    const other = await account();
    expect(await gate.tg.credits.charge(other, { required: 1, operationId: 'req_1:item' })).toMatchObject({ ok: true, replayed: false });
  });

  it('an operation id carries its terms: the same id with other amounts is an InvalidInputError and charges nothing', async () => {
    const id = await account();
    expect(await gate.tg.credits.charge(id, { required: 1, operationId: 'req_2' })).toMatchObject({ ok: true, charged: 1, replayed: false });
    for (const other of [{ required: 50 }, { required: 1, optional: 1 }, { required: 0, optional: 1 }, { required: 2 }]) {
      await expect(gate.tg.credits.charge(id, { ...other, operationId: 'req_2' }), JSON.stringify(other)).rejects.toThrowError(
        new InvalidInputError('Operation id "req_2" was already used with other terms: an operation id names one operation'),
      );
    }
    // The same terms still replay, and only the first charge was taken.
    expect(await gate.tg.credits.charge(id, { required: 1, optional: 0, operationId: 'req_2' })).toEqual({
      ok: true,
      charged: 1,
      balance: 29,
      available: 29,
      sources: [{ grantId: 'cycle:1', amount: 1 }],
      replayed: true,
    });
    expect((await gate.tg.usage(id)).credits).toMatchObject({ balance: 29, spent: 1 });
  });

  it('an insufficient charge does not use up its operation id', async () => {
    const id = await account();
    await gate.tg.credits.charge(id, { required: 30 });
    expect((await gate.tg.credits.charge(id, { required: 1, operationId: 'op-x' })).ok).toBe(false);
    gate.clock.advance(30 * 86_400_000);
    expect(await gate.tg.credits.charge(id, { required: 1, operationId: 'op-x' })).toMatchObject({ ok: true, replayed: false });
  });

  it('bad amounts and operation ids are an InvalidInputError, and charge nothing', async () => {
    const id = await account();
    for (const request of [
      { required: -1 },
      { required: 1.5 },
      { required: Number.NaN },
      { required: 0 },
      { required: 1, optional: -2 },
      { required: 1, operationId: '' },
      { required: 1, operationId: 'x'.repeat(256) },
    ]) {
      await expect(gate.tg.credits.charge(id, request), JSON.stringify(request)).rejects.toBeInstanceOf(InvalidInputError);
    }
    expect(await gate.tg.credits.charge(id, { required: 0, optional: 3 })).toEqual({
      ok: true,
      charged: 3,
      balance: 27,
      available: 27,
      sources: [{ grantId: 'cycle:1', amount: 3 }],
      replayed: false,
    });
  });

  it('race: 64 concurrent charges of 1 against a balance of 37 -> exactly 37 succeed, balance 0, never negative', async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'starter' });
    await gate.tg.credits.charge(id, { required: 1000 - 37 });
    const outcomes = await Promise.all(Array.from({ length: 64 }, () => gate.tg.credits.charge(id, { required: 1 })));
    expect(outcomes.filter((o) => o.ok)).toHaveLength(37);
    expect(outcomes.filter((o) => !o.ok).every((o) => !o.ok && o.remaining === 0 && o.needed === 1)).toBe(true);
    const balances = outcomes.flatMap((o) => (o.ok ? [o.balance] : [])).sort((a, b) => a - b);
    expect(balances).toEqual(Array.from({ length: 37 }, (_, i) => i));
    expect((await gate.tg.usage(id)).credits).toMatchObject({ balance: 0, spent: 1000, held: 0 });
  });

  it('the journal reconciles with the balance, spent and held of the cycle', async () => {
    const id = await account('pro');
    await gate.tg.credits.charge(id, { required: 3, optional: 2 });
    const hold = await gate.tg.holds.open(id, { items: 10, perItem: { required: 1, optional: 1 } });
    const budget = await gate.tg.holds.openBudget(id, { amount: 6 });
    if (!hold.ok || !budget.ok) throw new Error('open refused');
    await gate.tg.holds.settle(id, hold.hold.id, { itemId: 'a', optionalSpent: 1 });
    await gate.tg.holds.settle(id, hold.hold.id, { itemId: 'b', failed: 'x' });
    await gate.tg.holds.spend(id, budget.hold.id, { itemId: 'p', amount: 4 });
    expect(await gate.tg.credits.reconcile(id)).toMatchObject({ complete: true, matches: true, stored: { balance: 4969, spent: 11, held: 20 } });
    await gate.tg.holds.cancel(id, hold.hold.id);
    const r = await gate.tg.credits.reconcile(id);
    expect(r).toMatchObject({ complete: true, matches: true, cycle: 1, stored: { balance: 4987, spent: 11, held: 2 } });
    expect(r.journal).toEqual(r.stored);
  });

  it('a refund to an ended cycle is journaled without raising the current balance, and the new cycle reconciles', async () => {
    const id = await account('pro');
    const hold = await gate.tg.holds.open(id, { items: 10, perItem: { required: 1 } });
    if (!hold.ok) throw new Error(hold.reason);
    await gate.tg.holds.settle(id, hold.hold.id, { itemId: 'a' });
    await gate.tg.accounts.startCycle(id);
    await gate.tg.credits.charge(id, { required: 5 });
    await gate.tg.holds.settle(id, hold.hold.id, { itemId: 'b' });
    await gate.tg.holds.cancel(id, hold.hold.id);
    expect(await gate.tg.credits.reconcile(id)).toMatchObject({ complete: true, matches: true, cycle: 2, stored: { balance: 4995, spent: 5, held: 0 } });
  });

  it('an idle account has no journal yet and reconciles to its allowance; the grant comes with the first movement', async () => {
    const id = await account();
    if (gate.onRedis) expect(await gate.command(['EXISTS', `${gate.prefix}:{${id}}:jn`])).toBe(0);
    expect(await gate.tg.credits.reconcile(id)).toMatchObject({ complete: true, matches: true, entries: 0, journal: { balance: 30, spent: 0, held: 0 } });
    await gate.tg.credits.charge(id, { required: 4 });
    expect(await gate.tg.credits.reconcile(id)).toMatchObject({ complete: true, matches: true, entries: 2, journal: { balance: 26, spent: 4, held: 0 } });
  });

  it('the journal restarts with the grant of each new cycle', async () => {
    const id = await account();
    await gate.tg.credits.charge(id, { required: 5 });
    gate.clock.advance(31 * 86_400_000);
    await gate.tg.credits.charge(id, { required: 2 });
    expect(await gate.tg.credits.reconcile(id)).toMatchObject({
      complete: true,
      matches: true,
      cycle: 2,
      entries: 2,
      journal: { balance: 28, spent: 2, held: 0 },
    });
  });
});

describe('the journal can be bounded or switched off', () => {
  it.each(['node-redis', 'memory'] as const)('switched off on %s: no stream is written and reconcile says it is incomplete', async (kind) => {
    const gate = await openTollgate(kind, 'journal-off', { journal: false });
    try {
      const id = accountId();
      await gate.tg.accounts.create(id, { plan: 'free' });
      await gate.tg.credits.charge(id, { required: 1 });
      if (gate.onRedis) expect(await gate.command(['EXISTS', `${gate.prefix}:{${id}}:jn`])).toBe(0);
      expect(await gate.tg.credits.reconcile(id)).toMatchObject({ complete: false, matches: false });
    } finally {
      await gate.close();
    }
  });

  it('bounded by entries: the stream is trimmed near the bound', async () => {
    const gate = await openTollgate('ioredis', 'journal-len', { journal: { maxEntries: 10 } });
    try {
      const id = accountId();
      await gate.tg.accounts.create(id, { plan: 'starter' });
      for (let i = 0; i < 300; i++) await gate.tg.credits.charge(id, { required: 1 });
      const length = Number(await gate.command(['XLEN', `${gate.prefix}:{${id}}:jn`]));
      expect(length).toBeLessThan(150);
      expect(length).toBeGreaterThanOrEqual(10);
      expect(await gate.tg.credits.reconcile(id)).toMatchObject({ complete: false });
    } finally {
      await gate.close();
    }
  });
});
