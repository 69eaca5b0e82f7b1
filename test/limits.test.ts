// Per-minute request budgets (SPEC §4), through both clients.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CLIENT_KINDS, TEST_START, accountId, openTollgate, type TestGate } from './helpers/tollgate.ts';

describe.each(CLIENT_KINDS)('rate limiting through %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'limits');
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START + 15_000));

  async function freeAccount() {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'free' });
    return id;
  }

  it('admits the plan budget per 60 s window, then denies with the seconds until reset', async () => {
    const id = await freeAccount();
    for (let i = 1; i <= 30; i++) {
      const a = await gate.tg.limits.admit(id);
      expect(a).toMatchObject({ allowed: true, rateLimit: { limit: 30, remaining: 30 - i, resetMs: 45_000 } });
    }
    const denied = await gate.tg.limits.admit(id);
    expect(denied).toEqual({ allowed: false, reason: 'rate_limited', rateLimit: { limit: 30, remaining: 0, resetMs: 45_000 }, retryAfterMs: 45_000 });
  });

  it('a denied (429) request leaves the counter unchanged', async () => {
    const id = await freeAccount();
    for (let i = 0; i < 30; i++) await gate.tg.limits.admit(id);
    for (let i = 0; i < 5; i++) expect((await gate.tg.limits.admit(id)).allowed).toBe(false);
    expect((await gate.tg.accounts.inspect(id)).windows.api).toEqual({ window: Math.floor(gate.clock.now / 60_000), used: 30 });
    gate.clock.advance(45_000);
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: true, rateLimit: { remaining: 29, resetMs: 60_000 } });
  });

  it('the window is fixed: the budget comes back whole when the next window starts', async () => {
    const id = await freeAccount();
    for (let i = 0; i < 30; i++) await gate.tg.limits.admit(id);
    gate.clock.advance(44_999);
    expect((await gate.tg.limits.admit(id)).allowed).toBe(false);
    gate.clock.advance(1);
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: true, rateLimit: { remaining: 29 } });
  });

  it('surface web is a separate counter with the api budget by default', async () => {
    const id = await freeAccount();
    for (let i = 0; i < 30; i++) await gate.tg.limits.admit(id, { surface: 'api' });
    expect((await gate.tg.limits.admit(id, { surface: 'api' })).allowed).toBe(false);
    expect(await gate.tg.limits.admit(id, { surface: 'web' })).toMatchObject({ allowed: true, rateLimit: { limit: 30, remaining: 29 } });
  });

  it('the credit pre-check rides in the same call: counted, and reports balance and needed', async () => {
    const id = await freeAccount();
    await gate.tg.credits.charge(id, { required: 29 });
    expect(await gate.tg.limits.admit(id, { credits: 1 })).toMatchObject({ allowed: true, credits: { sufficient: true, balance: 1, needed: 1 } });
    expect(await gate.tg.limits.admit(id, { credits: 2 })).toMatchObject({ allowed: true, rateLimit: { remaining: 28 }, credits: { sufficient: false, balance: 1, needed: 2 } });
  });

  it('the pre-check sees the new cycle (lazy rollover inside admit)', async () => {
    const id = await freeAccount();
    await gate.tg.credits.charge(id, { required: 30 });
    expect(await gate.tg.limits.admit(id, { credits: 1 })).toMatchObject({ credits: { sufficient: false, balance: 0 } });
    gate.clock.advance(30 * 86_400_000);
    expect(await gate.tg.limits.admit(id, { credits: 1 })).toMatchObject({ credits: { sufficient: true, balance: 30 } });
  });

  it('a rate-limited request with a pre-check is denied before credits are looked at', async () => {
    const id = await freeAccount();
    for (let i = 0; i < 30; i++) await gate.tg.limits.admit(id);
    expect(await gate.tg.limits.admit(id, { credits: 1 })).toMatchObject({ allowed: false, reason: 'rate_limited' });
  });

  it('usage reads the state without counting a request', async () => {
    const id = await freeAccount();
    await gate.tg.limits.admit(id);
    for (let i = 0; i < 5; i++) expect((await gate.tg.usage(id)).rateLimit).toMatchObject({ limit: 30, remaining: 29, resetMs: 45_000 });
    expect(await gate.tg.limits.admit(id)).toMatchObject({ rateLimit: { remaining: 28 } });
  });

  it('a plan change moves the request budget at once', async () => {
    const id = await freeAccount();
    for (let i = 0; i < 30; i++) await gate.tg.limits.admit(id);
    await gate.tg.accounts.changePlan(id, 'starter');
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: true, rateLimit: { limit: 100, remaining: 69 } });
  });
});
