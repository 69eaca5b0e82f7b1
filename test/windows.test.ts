// Window algorithms (docs/limits.md): fixed windows keep the clock-aligned rule exactly (clock-aligned, retry
// at the reset), sliding windows count the two-window estimate, retryAfterMs is exactly when a
// request fits for both, and `stagger` spreads fixed resets across subjects. Through both
// clients (and on the cluster project).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Admission, Plan, SurfaceWindows } from '../src/index.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { mostRestrictive, windowsFromSpec, windowsSpec, type RateLimitState } from '../src/rules/windows.ts';
import { openTollgate, type TestGate, newAccount } from './helpers/tollgate.ts';
import { TEST_START, backends, accountId, type ManualClock } from './helpers/tollgate.ts';

const MINUTE = 60_000;
const plan = (limits: SurfaceWindows): Plan => ({ limits, credits: { allowance: 100, cycle: { days: 30 } }, holds: { cap: 1, maxItems: 10, surfaces: [] } });
const PLANS = {
  ...EXAMPLE_PLANS,
  sliding: plan({ api: [{ limit: 10, windowMs: MINUTE, algorithm: 'sliding' }] }),
  mixed: plan({
    api: [
      { limit: 4, windowMs: 10_000 },
      { limit: 10, windowMs: MINUTE, algorithm: 'sliding' },
    ],
  }),
};
const POLICIES = {
  anonymous: { api: [{ limit: 10, windowMs: MINUTE }] },
  pair: {
    api: [
      { limit: 5, windowMs: 10_000 },
      { limit: 10, windowMs: MINUTE },
    ],
  },
  slow: { api: [{ limit: 10, windowMs: MINUTE, algorithm: 'sliding' as const }] },
};

/**
 * The sliding estimate as docs/limits.md#sliding-windows states it, floor(previous x (1 - elapsed / W)) + current,
 * with the fraction kept exact (previous x (W - elapsed) / W) so no float rounding decides.
 */
const estimate = (previous: number, current: number, elapsed: number, windowMs: number) => Math.floor((previous * (windowMs - elapsed)) / windowMs) + current;

/**
 * The first ms from `now` on at which a request of `cost` fits a sliding window, found by
 * trying every ms: an independent reference for retryAfterMs.
 */
function firstFit(counts: Map<number, number>, now: number, windowMs: number, limit: number, cost: number): number {
  for (let t = now; ; t++) {
    const window = Math.floor(t / windowMs);
    const used = estimate(counts.get(window - 1) ?? 0, counts.get(window) ?? 0, t - window * windowMs, windowMs);
    if (used + cost <= limit) return t - now;
  }
}

/** Denied now; still denied at retryAfterMs - 1; admitted at retryAfterMs. Returns retryAfterMs. */
async function expectExactRetry(clock: ManualClock, admit: () => Promise<Admission>): Promise<number> {
  const denied = await admit();
  if (denied.allowed || denied.retryAfterMs === null) throw new Error(`expected a denial with a retry time, got ${JSON.stringify(denied)}`);
  const retry = denied.retryAfterMs;
  expect(retry).toBeGreaterThan(0);
  clock.advance(retry - 1);
  expect(await admit(), `at retryAfterMs - 1 (${retry - 1} ms)`).toMatchObject({ ok: false, allowed: false });
  clock.advance(1);
  expect(await admit(), `at retryAfterMs (${retry} ms)`).toMatchObject({ ok: true, allowed: true });
  return retry;
}

describe.each(backends())('window algorithms through %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'windows', { plans: PLANS, policies: POLICIES });
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START + 15_000));

  const account = (planName: keyof typeof PLANS) => newAccount(gate.tg, planName);
  const admitN = async (id: string, n: number) => {
    for (let i = 0; i < n; i++) expect((await gate.tg.limits.admit(id)).allowed).toBe(true);
  };

  describe('fixed windows', () => {
    it('are clock-aligned: subjects that start at different moments reset at the same instant, the minute boundary', async () => {
      const a = await account('free');
      const b = await account('free');
      const first = await gate.tg.limits.admit(a);
      gate.clock.advance(20_123);
      const second = await gate.tg.limits.admit(b);
      const resetAt = (admission: Admission, at: number) => at + admission.rateLimit.resetMs;
      expect(resetAt(first, TEST_START + 15_000)).toBe(TEST_START + MINUTE);
      expect(resetAt(second, gate.clock.now)).toBe(TEST_START + MINUTE);
    });

    it('retryAfterMs is the reset of the window: at retryAfterMs - 1 still denied, at retryAfterMs admitted', async () => {
      const id = await account('free');
      await admitN(id, 30);
      expect(await expectExactRetry(gate.clock, () => gate.tg.limits.admit(id))).toBe(45_000);
    });

    it('a costly request is retried at the same reset (the whole window comes back)', async () => {
      const id = await account('free');
      await admitN(id, 20);
      expect(await expectExactRetry(gate.clock, () => gate.tg.limits.admit(id, { cost: 11 }))).toBe(45_000);
    });
  });

  describe('sliding windows', () => {
    it('just after a boundary the count is floor(previous x (1 - elapsed / W)) + current', async () => {
      const id = await account('sliding');
      await admitN(id, 8);
      gate.clock.set(TEST_START + MINUTE + 1_000);
      const used = estimate(8, 0, 1_000, MINUTE);
      expect(used).toBe(7);
      expect((await gate.tg.limits.peek(id)).rateLimit).toEqual({ limit: 10, remaining: 10 - used, resetMs: 59_000, windowMs: MINUTE, algorithm: 'sliding' });
      await admitN(id, 10 - used);
      expect(await gate.tg.limits.admit(id)).toMatchObject({ ok: false, allowed: false, reason: 'rate_limited', rateLimit: { remaining: 0 } });
    });

    it('half-way through the window the previous count weighs half (rounded down)', async () => {
      const id = await account('sliding');
      await admitN(id, 7);
      gate.clock.set(TEST_START + MINUTE + 30_000);
      await admitN(id, 2);
      const used = estimate(7, 2, 30_000, MINUTE);
      expect(used).toBe(5);
      expect((await gate.tg.limits.peek(id)).rateLimit).toMatchObject({ remaining: 10 - used, resetMs: 30_000 });
      await admitN(id, 10 - used);
      expect((await gate.tg.limits.admit(id)).allowed).toBe(false);
    });

    it('the estimate follows the formula ms by ms across a window', async () => {
      const id = await account('sliding');
      await gate.tg.limits.admit(id, { cost: 9 });
      for (const elapsed of [0, 1, 6_666, 6_667, 13_334, 29_999, 30_000, 53_333, 53_334, 59_999]) {
        gate.clock.set(TEST_START + MINUTE + elapsed);
        expect((await gate.tg.limits.peek(id)).rateLimit.remaining, `elapsed ${elapsed}`).toBe(10 - estimate(9, 0, elapsed, MINUTE));
      }
      gate.clock.set(TEST_START + 2 * MINUTE);
      expect((await gate.tg.limits.peek(id)).rateLimit.remaining).toBe(10);
    });

    it('resetMs of a sliding window is the end of its current window', async () => {
      const id = await account('sliding');
      expect((await gate.tg.limits.admit(id)).rateLimit).toMatchObject({ resetMs: 45_000, algorithm: 'sliding' });
      gate.clock.set(TEST_START + MINUTE + 12_345);
      expect((await gate.tg.limits.admit(id)).rateLimit.resetMs).toBe(MINUTE - 12_345);
    });

    it('a denied request counts in no sliding window', async () => {
      const id = await account('sliding');
      await admitN(id, 10);
      gate.clock.set(TEST_START + MINUTE + 30_000);
      await admitN(id, 5);
      for (let i = 0; i < 3; i++) expect((await gate.tg.limits.admit(id, { cost: 2 })).allowed).toBe(false);
      expect((await gate.tg.limits.peek(id)).rateLimit.remaining).toBe(0);
      gate.clock.set(TEST_START + 2 * MINUTE + 30_000);
      // Only the 5 admitted requests are left, weighing half.
      expect((await gate.tg.limits.peek(id)).rateLimit.remaining).toBe(10 - estimate(5, 0, 30_000, MINUTE));
    });

    it('reset clears the previous window too: the estimate starts from nothing', async () => {
      const id = await account('sliding');
      await admitN(id, 10);
      gate.clock.set(TEST_START + MINUTE + 1_000);
      expect((await gate.tg.limits.peek(id)).rateLimit.remaining).toBe(1);
      await gate.tg.limits.reset(id);
      expect((await gate.tg.limits.peek(id)).rateLimit.remaining).toBe(10);
    });

    // prev/cur: requests counted in the previous and current window; elapsed: ms into the current one.
    const cases = [
      { prev: 0, cur: 10, elapsed: 15_000, cost: 1 },
      { prev: 10, cur: 0, elapsed: 0, cost: 1 },
      { prev: 10, cur: 5, elapsed: 30_000, cost: 3 },
      { prev: 7, cur: 5, elapsed: 20_000, cost: 2 },
      { prev: 3, cur: 9, elapsed: 50_000, cost: 2 },
      { prev: 0, cur: 10, elapsed: 59_999, cost: 10 },
      { prev: 9, cur: 1, elapsed: 1, cost: 4 },
    ];
    it.each(cases)(
      'retryAfterMs is exact (previous $prev, current $cur, $elapsed ms in, cost $cost): the first ms the request fits',
      async ({ prev, cur, elapsed, cost }) => {
        const id = await account('sliding');
        if (prev > 0) await gate.tg.limits.admit(id, { cost: prev });
        const now = TEST_START + MINUTE + elapsed;
        gate.clock.set(now);
        if (cur > 0) expect((await gate.tg.limits.admit(id, { cost: cur })).allowed).toBe(true);
        const window = Math.floor(now / MINUTE);
        const expected = firstFit(
          new Map([
            [window - 1, prev],
            [window, cur],
          ]),
          now,
          MINUTE,
          10,
          cost,
        );
        expect(await expectExactRetry(gate.clock, () => gate.tg.limits.admit(id, { cost }))).toBe(expected);
      },
    );

    it('a fixed and a sliding window on one surface: retryAfterMs is exact when either denies', async () => {
      const id = await account('mixed');
      // The fixed 10 s window denies first.
      await admitN(id, 4);
      expect(await expectExactRetry(gate.clock, () => gate.tg.limits.admit(id))).toBe(5_000);
      // Later the sliding minute is full (9 so far after this), then it denies.
      gate.clock.set(TEST_START + 30_000);
      await admitN(id, 4);
      gate.clock.set(TEST_START + 40_000);
      const denied = await gate.tg.limits.admit(id, { cost: 2 });
      expect(denied).toMatchObject({ ok: false, allowed: false, rateLimit: { windowMs: MINUTE, algorithm: 'sliding' } });
      await expectExactRetry(gate.clock, () => gate.tg.limits.admit(id, { cost: 2 }));
    });

    it('a policy subject may have sliding windows too', async () => {
      const ip = `ip:${accountId('slide')}`;
      for (let i = 0; i < 10; i++) expect((await gate.tg.limits.admit(ip, { policy: 'slow' })).allowed).toBe(true);
      gate.clock.set(TEST_START + MINUTE + 30_000);
      expect((await gate.tg.limits.peek(ip, { policy: 'slow' })).rateLimit).toMatchObject({
        remaining: 10 - estimate(10, 0, 30_000, MINUTE),
        algorithm: 'sliding',
      });
    });
  });
});

describe.each(backends())('stagger through %s', (kind) => {
  let staggered: TestGate;
  let aligned: TestGate;
  beforeAll(async () => {
    staggered = await openTollgate(kind, 'stagger', { plans: PLANS, policies: POLICIES, stagger: true });
    aligned = await openTollgate(kind, 'aligned', { plans: PLANS, policies: POLICIES });
  });
  afterAll(async () => {
    await staggered.close();
    await aligned.close();
  });
  beforeEach(() => {
    staggered.clock.set(TEST_START + 15_000);
    aligned.clock.set(TEST_START + 15_000);
  });

  const resetsOf = async (gate: TestGate, subjects: string[]) => {
    const out: number[] = [];
    for (const s of subjects) out.push(gate.clock.now + (await gate.tg.limits.admit(s, { policy: 'anonymous' })).rateLimit.resetMs);
    return out;
  };

  it('stagger: true spreads resets: 50 subjects with a 60 s window do not all reset at the same ms', async () => {
    const subjects = Array.from({ length: 50 }, (_, i) => `ip:198.51.100.${i}:${accountId('s')}`);
    const resets = await resetsOf(staggered, subjects);
    // Offsets are hashes of the ids, spread over the minute: to the ms nearly all differ, and
    // 50 subjects fall into about 34 of the 60 seconds (fewer than 20 would be a bad spread).
    expect(new Set(resets).size).toBeGreaterThan(45);
    expect(new Set(resets.map((r) => Math.ceil(r / 1000))).size).toBeGreaterThan(20);
    for (const r of resets) {
      expect(r).toBeGreaterThan(staggered.clock.now);
      expect(r).toBeLessThanOrEqual(staggered.clock.now + MINUTE);
    }
  });

  it('without stagger (the default) every subject resets at the same clock-aligned instant', async () => {
    const subjects = Array.from({ length: 20 }, (_, i) => `ip:198.51.100.${i}:${accountId('a')}`);
    expect(new Set(await resetsOf(aligned, subjects))).toEqual(new Set([TEST_START + MINUTE]));
  });

  it("stagger offsets every fixed window of a surface, several windows as one: each by the subject's offset modulo its length", async () => {
    const subjects = Array.from({ length: 20 }, (_, i) => `ip:192.0.2.${i}:${accountId('m')}`);
    const single = await resetsOf(staggered, subjects);
    const pairs: number[][] = [];
    for (const s of subjects) {
      const admitted = await staggered.tg.limits.admit(s, { policy: 'pair' });
      pairs.push(admitted.windows.map((w) => staggered.clock.now + w.resetMs));
    }
    // The minute of the two-window policy resets with the one-window policy's minute.
    expect(pairs.map((p) => p[1])).toEqual(single);
    // The 10 s window is offset too (not all on the 10 s boundary), and falls within 10 s.
    expect(new Set(pairs.map((p) => p[0])).size).toBeGreaterThan(15);
    for (const [tenSeconds] of pairs) expect(tenSeconds! - staggered.clock.now).toBeLessThanOrEqual(10_000);
  });

  it("a subject's own staggered resets are exactly windowMs apart, and its count restarts at each", async () => {
    const ip = `ip:${accountId('own')}`;
    const first = await staggered.tg.limits.admit(ip, { policy: 'anonymous' });
    const resetAt = staggered.clock.now + first.rateLimit.resetMs;
    staggered.clock.set(resetAt - 1);
    expect((await staggered.tg.limits.admit(ip, { policy: 'anonymous' })).rateLimit).toMatchObject({ remaining: 8, resetMs: 1 });
    staggered.clock.set(resetAt);
    expect((await staggered.tg.limits.admit(ip, { policy: 'anonymous' })).rateLimit).toMatchObject({ remaining: 9, resetMs: MINUTE });
    staggered.clock.set(resetAt + MINUTE - 1);
    expect((await staggered.tg.limits.admit(ip, { policy: 'anonymous' })).rateLimit).toMatchObject({ remaining: 8, resetMs: 1 });
    staggered.clock.set(resetAt + MINUTE);
    expect((await staggered.tg.limits.admit(ip, { policy: 'anonymous' })).rateLimit).toMatchObject({ remaining: 9, resetMs: MINUTE });
  });

  it('a staggered account keeps its offset on every surface read (admit, peek and usage agree)', async () => {
    const id = accountId();
    await staggered.tg.accounts.create(id, { plan: 'free' });
    const admitted = await staggered.tg.limits.admit(id);
    expect((await staggered.tg.limits.peek(id)).rateLimit).toEqual(admitted.rateLimit);
    expect((await staggered.tg.usage(id)).rateLimit).toMatchObject({ remaining: 29, resetMs: admitted.rateLimit.resetMs });
    // A staggered denial is retried exactly at its own reset.
    for (let i = 0; i < 29; i++) await staggered.tg.limits.admit(id);
    await expectExactRetry(staggered.clock, () => staggered.tg.limits.admit(id));
  });
});

describe('window specs and the most restrictive window (pure)', () => {
  const state = (remaining: number, windowMs: number): RateLimitState => ({ limit: 10, remaining, resetMs: 1, windowMs, algorithm: 'fixed' });

  it('a spec string carries every window to the scripts and back unchanged', () => {
    const windows = [
      { limit: 10, windowMs: 1_000, algorithm: 'fixed' as const },
      { limit: 300, windowMs: MINUTE, algorithm: 'sliding' as const },
    ];
    expect(windowsSpec(windows)).toBe('10/1 300/60s');
    expect(windowsFromSpec(windowsSpec(windows))).toEqual(windows);
  });

  it('allowed: the fewest remaining, the first of equals', () => {
    expect(mostRestrictive([state(5, 1_000), state(3, 60_000), state(3, 3_600_000)], [0, 0, 0])).toEqual({ index: 1, retryAfterMs: null });
  });

  it('denied: the denying window with the latest retry, wherever it stands in the list', () => {
    expect(mostRestrictive([state(0, 60_000), state(0, 1_000)], [40_000, 500])).toEqual({ index: 0, retryAfterMs: 40_000 });
    expect(mostRestrictive([state(0, 1_000), state(1, 60_000)], [500, 40_000])).toEqual({ index: 1, retryAfterMs: 40_000 });
    expect(mostRestrictive([state(0, 1_000), state(4, 60_000)], [500, 0])).toEqual({ index: 0, retryAfterMs: 500 });
  });

  it('a window the cost can never fit wins with no retry time', () => {
    expect(mostRestrictive([state(0, 1_000), state(9, 60_000)], [500, -1])).toEqual({ index: 1, retryAfterMs: null });
  });
});
