// Request limits of accounts (docs/limits.md): every window of a surface counted in one call,
// cost, the most restrictive window, peek and reset, the credit pre-check in the same round
// trip, through both clients (and on the cluster project).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Plan, RateLimitState, SurfaceWindows } from '../src/index.ts';
import { AccountNotFoundError, InvalidInputError } from '../src/errors.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { openRecordingTollgate, storedKeys, type RecordingGate } from './helpers/recording.ts';
import { TEST_START, backends, accountId, newAccount } from './helpers/tollgate.ts';

const minute = (limit: number) => [{ limit, windowMs: 60_000 }];
const plan = (limits: SurfaceWindows): Plan => ({ limits, credits: { allowance: 100, cycle: { days: 30 } }, holds: { cap: 1, maxItems: 10, surfaces: [] } });

/** The seed's plans, and plans with several windows per surface. */
const PLANS = {
  ...EXAMPLE_PLANS,
  // A per-10 s burst limit under the per-minute budget.
  burst: plan({
    api: [
      { limit: 3, windowMs: 10_000 },
      { limit: 5, windowMs: 60_000 },
    ],
    web: minute(30),
  }),
  weighted: plan({
    api: [
      { limit: 10, windowMs: 10_000 },
      { limit: 12, windowMs: 60_000 },
    ],
  }),
  layered: plan({
    api: [
      { limit: 5, windowMs: 10_000 },
      { limit: 100, windowMs: 60_000 },
      { limit: 1000, windowMs: 3_600_000, algorithm: 'sliding' },
    ],
  }),
  apiOnly: plan({ api: minute(30) }),
};

/** One window's state as admissions report it. */
const w = (limit: number, windowMs: number, remaining: number, resetMs: number, algorithm: 'fixed' | 'sliding' = 'fixed'): RateLimitState => ({
  limit,
  remaining,
  resetMs,
  windowMs,
  algorithm,
});

describe.each(backends())('limits of an account through %s', (kind) => {
  let gate: RecordingGate;
  beforeAll(async () => {
    gate = await openRecordingTollgate(kind, 'limits', { plans: PLANS });
  });
  afterAll(() => gate.close());
  // 15 s into a minute (and into the hour); 10 s windows are 5 s from their end.
  beforeEach(() => {
    gate.clock.set(TEST_START + 15_000);
    gate.recorder.clear();
  });

  async function account(planName: keyof typeof PLANS = 'free') {
    const id = await newAccount(gate.tg, planName);
    gate.recorder.clear();
    return id;
  }
  const admitN = async (id: string, n: number, options = {}) => {
    for (let i = 0; i < n; i++) expect((await gate.tg.limits.admit(id, options)).allowed).toBe(true);
  };

  describe('one fixed 60 s window', () => {
    it('admits the plan budget per clock-aligned minute, then denies with retryAfterMs to the reset', async () => {
      const id = await account();
      for (let i = 1; i <= 30; i++) {
        expect(await gate.tg.limits.admit(id)).toEqual({
          ok: true,
          allowed: true,
          rateLimit: w(30, 60_000, 30 - i, 45_000),
          windows: [w(30, 60_000, 30 - i, 45_000)],
        });
      }
      expect(await gate.tg.limits.admit(id)).toEqual({
        ok: false,
        allowed: false,
        reason: 'rate_limited',
        rateLimit: w(30, 60_000, 0, 45_000),
        windows: [w(30, 60_000, 0, 45_000)],
        retryAfterMs: 45_000,
      });
    });

    it('a denied (429) request is not counted: the budget comes back whole at the reset, not a ms before', async () => {
      const id = await account();
      await admitN(id, 30);
      for (let i = 0; i < 5; i++) expect((await gate.tg.limits.admit(id)).allowed).toBe(false);
      gate.clock.advance(44_999);
      expect(await gate.tg.limits.admit(id)).toMatchObject({ ok: false, allowed: false, retryAfterMs: 1 });
      gate.clock.advance(1);
      expect(await gate.tg.limits.admit(id)).toEqual({ ok: true, allowed: true, rateLimit: w(30, 60_000, 29, 60_000), windows: [w(30, 60_000, 29, 60_000)] });
    });

    it('surface web is a separate counter with the api budget', async () => {
      const id = await account();
      await admitN(id, 30, { surface: 'api' });
      expect((await gate.tg.limits.admit(id, { surface: 'api' })).allowed).toBe(false);
      expect(await gate.tg.limits.admit(id, { surface: 'web' })).toMatchObject({ ok: true, allowed: true, rateLimit: { limit: 30, remaining: 29 } });
    });

    it('the default surface is api', async () => {
      const id = await account();
      await gate.tg.limits.admit(id);
      expect((await gate.tg.limits.peek(id, { surface: 'api' })).rateLimit.remaining).toBe(29);
      expect((await gate.tg.limits.peek(id, { surface: 'web' })).rateLimit.remaining).toBe(30);
    });
  });

  describe('the credit pre-check rides in the same round trip', () => {
    it('one command admits and reports balance and needed; short credits still count the request', async () => {
      const id = await account();
      await gate.tg.credits.charge(id, { required: 29 });
      gate.recorder.clear();
      expect(await gate.tg.limits.admit(id, { credits: 1 })).toMatchObject({ ok: true, allowed: true, credits: { sufficient: true, balance: 1, needed: 1 } });
      if (gate.onRedis) expect(gate.sent.map((c) => c.script)).toEqual(['admit']);
      expect(await gate.tg.limits.admit(id, { credits: 2 })).toMatchObject({
        ok: true,
        allowed: true,
        rateLimit: { remaining: 28 },
        credits: { sufficient: false, balance: 1, needed: 2 },
      });
      if (gate.onRedis) expect(gate.sent).toHaveLength(2);
    });

    it('without a pre-check the admission carries no credits', async () => {
      const id = await account();
      expect(await gate.tg.limits.admit(id)).not.toHaveProperty('credits');
    });

    it('the pre-check sees the next cycle once the current one has ended (lazy rollover)', async () => {
      const id = await account();
      await gate.tg.credits.charge(id, { required: 30 });
      expect(await gate.tg.limits.admit(id, { credits: 1 })).toMatchObject({ credits: { sufficient: false, balance: 0 } });
      gate.clock.advance(30 * 86_400_000);
      expect(await gate.tg.limits.admit(id, { credits: 1 })).toMatchObject({ credits: { sufficient: true, balance: 30 } });
    });

    it('a rate-limited request with a pre-check is denied (429) before credits are looked at, even with none left', async () => {
      const id = await account();
      await admitN(id, 30);
      const denied = await gate.tg.limits.admit(id, { credits: 1 });
      expect(denied).toMatchObject({ ok: false, allowed: false, reason: 'rate_limited' });
      expect(denied).not.toHaveProperty('credits');
      await gate.tg.credits.charge(id, { required: 30 });
      expect(await gate.tg.limits.admit(id, { credits: 1 })).toMatchObject({ ok: false, allowed: false, reason: 'rate_limited', retryAfterMs: 45_000 });
    });
  });

  describe('several windows per surface', () => {
    it('every window of a surface is checked and counted in one call', async () => {
      const id = await account('layered');
      const admitted = await gate.tg.limits.admit(id);
      if (gate.onRedis) expect(gate.sent.map((c) => c.script)).toEqual(['admit']);
      expect(admitted).toEqual({
        ok: true,
        allowed: true,
        rateLimit: w(5, 10_000, 4, 5_000),
        windows: [w(5, 10_000, 4, 5_000), w(100, 60_000, 99, 45_000), w(1000, 3_600_000, 999, 3_585_000, 'sliding')],
      });
      expect((await gate.tg.limits.peek(id)).windows.map((x) => x.remaining)).toEqual([4, 99, 999]);
    });

    it('two windows: the short one denies first, and later the long one', async () => {
      const id = await account('burst');
      await admitN(id, 3);
      expect(await gate.tg.limits.admit(id)).toEqual({
        ok: false,
        allowed: false,
        reason: 'rate_limited',
        rateLimit: w(3, 10_000, 0, 5_000),
        windows: [w(3, 10_000, 0, 5_000), w(5, 60_000, 2, 45_000)],
        retryAfterMs: 5_000,
      });
      gate.clock.advance(5_000);
      await admitN(id, 2);
      expect(await gate.tg.limits.admit(id)).toEqual({
        ok: false,
        allowed: false,
        reason: 'rate_limited',
        rateLimit: w(5, 60_000, 0, 40_000),
        windows: [w(3, 10_000, 1, 10_000), w(5, 60_000, 0, 40_000)],
        retryAfterMs: 40_000,
      });
      gate.clock.advance(40_000);
      expect(await gate.tg.limits.admit(id)).toMatchObject({ ok: true, allowed: true, windows: [{ remaining: 2 }, { remaining: 4 }] });
    });

    it('a request the short window denies is not counted in the long window either', async () => {
      const id = await account('burst');
      await admitN(id, 3);
      for (let i = 0; i < 4; i++) expect((await gate.tg.limits.admit(id)).allowed).toBe(false);
      expect((await gate.tg.limits.peek(id)).windows.map((x) => x.remaining)).toEqual([0, 2]);
    });

    it('allowed: rateLimit is the window with the fewest remaining', async () => {
      const id = await account('weighted');
      expect(await gate.tg.limits.admit(id, { cost: 3 })).toMatchObject({ rateLimit: w(10, 10_000, 7, 5_000), windows: [{ remaining: 7 }, { remaining: 9 }] });
      gate.clock.advance(5_000);
      expect(await gate.tg.limits.admit(id, { cost: 3 })).toMatchObject({ rateLimit: w(12, 60_000, 6, 40_000), windows: [{ remaining: 7 }, { remaining: 6 }] });
    });

    it('denied: rateLimit is the denying window with the latest retry, and retryAfterMs is that retry', async () => {
      const id = await account('weighted');
      await gate.tg.limits.admit(id, { cost: 4 });
      gate.clock.advance(5_000);
      await gate.tg.limits.admit(id, { cost: 5 });
      // Both windows deny 6: the 10 s one until +10 s, the minute until +40 s.
      expect(await gate.tg.limits.admit(id, { cost: 6 })).toEqual({
        ok: false,
        allowed: false,
        reason: 'rate_limited',
        rateLimit: w(12, 60_000, 3, 40_000),
        windows: [w(10, 10_000, 5, 10_000), w(12, 60_000, 3, 40_000)],
        retryAfterMs: 40_000,
      });
    });

    it('retryAfterMs with two denying windows is when the request fits: at retryAfterMs - 1 still denied, at retryAfterMs admitted', async () => {
      const id = await account('burst');
      await admitN(id, 3);
      gate.clock.advance(5_000);
      await admitN(id, 2);
      const denied = await gate.tg.limits.admit(id);
      if (denied.allowed) throw new Error('expected a denial');
      gate.clock.advance(denied.retryAfterMs! - 1);
      expect(await gate.tg.limits.admit(id)).toMatchObject({ ok: false, allowed: false, retryAfterMs: 1 });
      gate.clock.advance(1);
      expect((await gate.tg.limits.admit(id)).allowed).toBe(true);
    });
  });

  describe('cost', () => {
    it('a request of cost n counts as n requests in every window', async () => {
      const id = await account('weighted');
      expect(await gate.tg.limits.admit(id, { cost: 4 })).toMatchObject({ ok: true, allowed: true, windows: [{ remaining: 6 }, { remaining: 8 }] });
      expect(await gate.tg.limits.admit(id, { cost: 6 })).toMatchObject({ ok: true, allowed: true, windows: [{ remaining: 0 }, { remaining: 2 }] });
    });

    it('a costly request that does not fit is denied whole and counts in no window', async () => {
      const id = await account('weighted');
      await gate.tg.limits.admit(id, { cost: 4 });
      // 7 does not fit the 6 left in the 10 s window; the minute has room but counts nothing.
      expect(await gate.tg.limits.admit(id, { cost: 7 })).toMatchObject({
        ok: false,
        allowed: false,
        reason: 'rate_limited',
        retryAfterMs: 5_000,
        windows: [{ remaining: 6 }, { remaining: 8 }],
      });
      expect((await gate.tg.limits.peek(id)).windows.map((x) => x.remaining)).toEqual([6, 8]);
      // What fits still fits.
      expect(await gate.tg.limits.admit(id, { cost: 6 })).toMatchObject({ ok: true, allowed: true, windows: [{ remaining: 0 }, { remaining: 2 }] });
    });

    it('one window: a costly request that does not fit is denied whole and counts nothing', async () => {
      const id = await account();
      await gate.tg.limits.admit(id, { cost: 25 });
      for (let i = 0; i < 3; i++) {
        expect(await gate.tg.limits.admit(id, { cost: 10 })).toEqual({
          ok: false,
          allowed: false,
          reason: 'rate_limited',
          rateLimit: w(30, 60_000, 5, 45_000),
          windows: [w(30, 60_000, 5, 45_000)],
          retryAfterMs: 45_000,
        });
      }
      expect((await gate.tg.limits.peek(id)).rateLimit.remaining).toBe(5);
      expect(await gate.tg.limits.admit(id, { cost: 5 })).toMatchObject({ ok: true, allowed: true, rateLimit: { remaining: 0 } });
    });

    it("a cost above a window's limit is denied as cost_exceeds_limit with no retry time, and counts nothing (several windows)", async () => {
      const id = await account('weighted');
      await gate.tg.limits.admit(id, { cost: 2 });
      expect(await gate.tg.limits.admit(id, { cost: 11 })).toEqual({
        ok: false,
        allowed: false,
        reason: 'cost_exceeds_limit',
        rateLimit: w(10, 10_000, 8, 5_000),
        windows: [w(10, 10_000, 8, 5_000), w(12, 60_000, 10, 45_000)],
        retryAfterMs: null,
      });
      expect(await gate.tg.limits.admit(id, { cost: 13 })).toMatchObject({ ok: false, allowed: false, reason: 'cost_exceeds_limit', retryAfterMs: null });
      expect((await gate.tg.limits.peek(id)).windows.map((x) => x.remaining)).toEqual([8, 10]);
    });

    it('a cost above the limit of the one window is cost_exceeds_limit too, even with a full window', async () => {
      const id = await account();
      await gate.tg.limits.admit(id, { cost: 5 });
      expect(await gate.tg.limits.admit(id, { cost: 31 })).toEqual({
        ok: false,
        allowed: false,
        reason: 'cost_exceeds_limit',
        rateLimit: w(30, 60_000, 25, 45_000),
        windows: [w(30, 60_000, 25, 45_000)],
        retryAfterMs: null,
      });
      await admitN(id, 25);
      expect(await gate.tg.limits.admit(id, { cost: 31 })).toMatchObject({ reason: 'cost_exceeds_limit', retryAfterMs: null });
      expect(await gate.tg.limits.admit(id, { cost: 30 })).toMatchObject({ reason: 'rate_limited', retryAfterMs: 45_000 });
    });

    it('a cost that fills the window exactly is admitted', async () => {
      const id = await account();
      expect(await gate.tg.limits.admit(id, { cost: 30 })).toMatchObject({ ok: true, allowed: true, rateLimit: { remaining: 0 } });
      expect(await gate.tg.limits.admit(id)).toMatchObject({ ok: false, allowed: false, reason: 'rate_limited' });
    });
  });

  describe('peek and reset', () => {
    it('peek reads the windows without counting', async () => {
      const id = await account('burst');
      await gate.tg.limits.admit(id);
      for (let i = 0; i < 5; i++) {
        expect(await gate.tg.limits.peek(id)).toEqual({ rateLimit: w(3, 10_000, 2, 5_000), windows: [w(3, 10_000, 2, 5_000), w(5, 60_000, 4, 45_000)] });
      }
      if (gate.onRedis) expect(gate.sent).toHaveLength(6);
      expect(await gate.tg.limits.admit(id)).toMatchObject({ windows: [{ remaining: 1 }, { remaining: 3 }] });
    });

    it('peek of a full window says 0 remaining and is not a denial that counts', async () => {
      const id = await account();
      await admitN(id, 30);
      expect((await gate.tg.limits.peek(id)).rateLimit).toEqual(w(30, 60_000, 0, 45_000));
      gate.clock.advance(45_000);
      expect((await gate.tg.limits.peek(id)).rateLimit).toEqual(w(30, 60_000, 30, 60_000));
    });

    it('usage reads the state without counting a request', async () => {
      const id = await account();
      await gate.tg.limits.admit(id);
      for (let i = 0; i < 5; i++) expect((await gate.tg.usage(id)).rateLimit).toMatchObject({ limit: 30, remaining: 29, resetMs: 45_000, surface: 'api' });
      expect(await gate.tg.limits.admit(id)).toMatchObject({ rateLimit: { remaining: 28 } });
    });

    it("reset clears the subject's counts on that surface, and only there", async () => {
      const id = await account();
      const other = await account();
      await admitN(id, 30, { surface: 'api' });
      await admitN(id, 5, { surface: 'web' });
      await admitN(other, 7, { surface: 'api' });
      await gate.tg.limits.reset(id, { surface: 'api' });
      expect((await gate.tg.limits.peek(id, { surface: 'api' })).rateLimit.remaining).toBe(30);
      expect((await gate.tg.limits.peek(id, { surface: 'web' })).rateLimit.remaining).toBe(25);
      expect((await gate.tg.limits.peek(other, { surface: 'api' })).rateLimit.remaining).toBe(23);
      expect(await gate.tg.limits.admit(id)).toMatchObject({ ok: true, allowed: true, rateLimit: { remaining: 29 } });
    });

    it('reset clears every window of the surface', async () => {
      const id = await account('layered');
      await admitN(id, 5);
      expect((await gate.tg.limits.admit(id)).allowed).toBe(false);
      await gate.tg.limits.reset(id);
      expect((await gate.tg.limits.peek(id)).windows.map((x) => x.remaining)).toEqual([5, 100, 1000]);
    });
  });

  describe('counters', () => {
    // What Redis stores: memory's counters are dropped by its own walk (test/memory.test.ts).
    it.skipIf(kind === 'memory')("every window's count lives in the account's own hash, one field per surface: counting touches no other key", async () => {
      const id = await account('layered');
      await gate.tg.limits.admit(id);
      await gate.tg.limits.admit(id);
      expect((await storedKeys(gate.command, gate.prefix, id)).filter((k) => k.includes('}:r'))).toEqual([]);
      const accountKey = `${gate.prefix}:{${id}}:a`;
      const words = String(await gate.command(['HGET', accountKey, 'r:api'])).split(' ');
      // One word per window, named by its length: '<seconds>:<window number>:<count>[:<previous count>]'.
      expect(words.map((word) => word.split(':')[0]).sort()).toEqual(['10', '3600', '60']);
      for (const word of words) expect(word.split(':')[2], word).toBe('2');
      // A window that has passed counts 0 without the field being cleared.
      gate.clock.advance(7_200_000);
      expect((await gate.tg.limits.peek(id)).windows.map((window) => window.remaining)).toEqual(
        (await gate.tg.limits.peek(id)).windows.map((window) => window.limit),
      );
    });
  });

  describe('plans and surfaces', () => {
    it('a plan change moves the windows at once; a window of the same length keeps its count', async () => {
      const id = await account();
      await admitN(id, 30);
      await gate.tg.accounts.changePlan(id, 'starter');
      expect(await gate.tg.limits.admit(id)).toMatchObject({ ok: true, allowed: true, rateLimit: { limit: 100, remaining: 69 } });
      await gate.tg.accounts.changePlan(id, 'burst');
      // 31 counted this minute is above burst's 5 a minute; its 10 s window is new.
      expect(await gate.tg.limits.admit(id)).toMatchObject({
        ok: false,
        allowed: false,
        rateLimit: w(5, 60_000, 0, 45_000),
        windows: [w(3, 10_000, 3, 5_000), w(5, 60_000, 0, 45_000)],
      });
    });

    it("a surface the account's plan does not have is an InvalidInputError and counts nothing", async () => {
      const id = await account('apiOnly');
      await expect(gate.tg.limits.admit(id, { surface: 'web' })).rejects.toThrowError(InvalidInputError);
      await expect(gate.tg.limits.admit(id, { surface: 'web' })).rejects.toThrowError(/Surface "web" is not one of the surfaces/);
      await expect(gate.tg.limits.peek(id, { surface: 'web' })).rejects.toThrowError(InvalidInputError);
      await expect(gate.tg.limits.reset(id, { surface: 'web' })).rejects.toThrowError(InvalidInputError);
      expect(await gate.tg.limits.admit(id)).toMatchObject({ ok: true, allowed: true, rateLimit: { remaining: 29 } });
    });

    it('a subject without an account (and no policy) is AccountNotFoundError', async () => {
      const id = accountId('nobody');
      await expect(gate.tg.limits.admit(id)).rejects.toThrowError(AccountNotFoundError);
      await expect(gate.tg.limits.peek(id)).rejects.toThrowError(AccountNotFoundError);
      await expect(gate.tg.limits.reset(id)).rejects.toThrowError(AccountNotFoundError);
    });
  });
});
