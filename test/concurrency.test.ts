// Limits in flight (docs/limits.md, "Concurrency limits"): `{ algorithm: "concurrency", limit,
// leaseMs }` takes a place with the windows, in the same script; limits.release frees it
// (idempotent); a place nobody releases frees itself after leaseMs; a denial has reason
// "concurrency" and retryAfterMs until the earliest place ends. On both clients and memory;
// the model is checked against Redis step by step.
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTollgate, type Plan, type SurfaceWindows } from '../src/index.ts';
import { InvalidInputError } from '../src/errors.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { FRAMEWORKS, get } from './helpers/frameworks.ts';
import { TEST_START, backends, newAccount, openTollgate, type TestGate } from './helpers/tollgate.ts';

const plan = (limits: SurfaceWindows): Plan => ({ limits, credits: { allowance: 100, cycle: { days: 30 } }, holds: { cap: 1, maxItems: 10, surfaces: [] } });
const PLANS = {
  ...EXAMPLE_PLANS,
  llm: plan({
    api: [{ limit: 30, windowMs: 60_000 }],
    completions: [
      { algorithm: 'concurrency', limit: 2, leaseMs: 30_000 },
      { limit: 10, windowMs: 60_000 },
    ],
  }),
  only: plan({ api: [{ algorithm: 'concurrency', limit: 1, leaseMs: 5_000 }] }),
};
const POLICIES = {
  uploads: {
    api: [
      { algorithm: 'concurrency' as const, limit: 2, leaseMs: 10_000 },
      { algorithm: 'bucket' as const, limit: 3, windowMs: 1_000, burst: 4 },
    ],
  },
};

describe.each(backends())('concurrency limits through %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'concurrency', { plans: PLANS, policies: POLICIES });
  });
  afterAll(() => gate.close());
  beforeEach(() => {
    gate.clock.set(TEST_START + 15_000);
  });

  it('takes a place per request with the windows; full, it denies "concurrency" until the earliest place ends; release frees one', async () => {
    const id = await newAccount(gate.tg, 'llm');
    const first = await gate.tg.limits.admit(id, { surface: 'completions' });
    expect(first).toMatchObject({ allowed: true, lease: expect.any(String) });
    expect(first.windows).toEqual([
      { limit: 10, remaining: 9, resetMs: 45_000, windowMs: 60_000, algorithm: 'fixed' },
      { limit: 2, remaining: 1, resetMs: 30_000, windowMs: 30_000, algorithm: 'concurrency' },
    ]);
    gate.clock.advance(1_000);
    const second = await gate.tg.limits.admit(id, { surface: 'completions' });
    expect(second).toMatchObject({ allowed: true, rateLimit: { algorithm: 'concurrency', remaining: 0, resetMs: 29_000 } });
    const denied = await gate.tg.limits.admit(id, { surface: 'completions' });
    expect(denied).toMatchObject({ allowed: false, reason: 'concurrency', retryAfterMs: 29_000, rateLimit: { algorithm: 'concurrency', remaining: 0 } });
    expect(denied).not.toHaveProperty('lease');
    // The denial counted nothing in the minute.
    expect(denied.windows[0]).toMatchObject({ remaining: 8 });
    expect(await gate.tg.limits.release(id, first.allowed ? first.lease! : '')).toBe(true);
    expect(await gate.tg.limits.release(id, first.allowed ? first.lease! : '')).toBe(false);
    const third = await gate.tg.limits.admit(id, { surface: 'completions' });
    expect(third).toMatchObject({ allowed: true, windows: [{ remaining: 7 }, { remaining: 0 }] });
    expect(third.allowed && third.lease).not.toBe(first.allowed && first.lease);
  });

  it('a place nobody releases frees itself after leaseMs', async () => {
    const id = await newAccount(gate.tg, 'only');
    const held = await gate.tg.limits.admit(id);
    expect(held).toMatchObject({ allowed: true, windows: [{ algorithm: 'concurrency', remaining: 0, resetMs: 5_000 }] });
    gate.clock.advance(4_999);
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: false, reason: 'concurrency', retryAfterMs: 1 });
    gate.clock.advance(1);
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: true });
    // The lapsed lease released late frees nothing.
    expect(await gate.tg.limits.release(id, held.allowed ? held.lease! : '')).toBe(false);
    expect(await gate.tg.limits.admit(id)).toMatchObject({ allowed: false, reason: 'concurrency' });
  });

  it('a window that denies takes no place', async () => {
    const ip = `ip:conc-${kind}-${process.pid}`;
    for (let i = 0; i < 2; i++) expect(await gate.tg.limits.admit(ip, { policy: 'uploads', cost: 2 })).toMatchObject({ allowed: true });
    // The bucket (4) is empty and both places are taken: concurrency answers first.
    expect(await gate.tg.limits.admit(ip, { policy: 'uploads' })).toMatchObject({ allowed: false, reason: 'concurrency' });
    const page = await gate.tg.limits.peek(ip, { policy: 'uploads' });
    expect(page.windows).toMatchObject([
      { algorithm: 'bucket', remaining: 0 },
      { algorithm: 'concurrency', remaining: 0 },
    ]);
  });

  it('keys.verify takes a place too; peek takes none', async () => {
    const id = await newAccount(gate.tg, 'llm');
    const { key } = await gate.tg.keys.issue(id);
    await gate.tg.limits.peek(id, { surface: 'completions' });
    const check = await gate.tg.keys.verify(key, { surface: 'completions' });
    expect(check).toMatchObject({ valid: true, admission: { allowed: true, lease: expect.stringMatching(/^\d+:completions:$/) } });
    expect((await gate.tg.limits.peek(id, { surface: 'completions' })).windows[1]).toMatchObject({ remaining: 1 });
  });

  it('bad input is a typed error', async () => {
    await expect(gate.tg.limits.release('acct_x', 'nonsense')).rejects.toThrow(InvalidInputError);
    const make = (api: unknown) => () => createTollgate({ memory: true, plans: { p: plan({ api } as never) } });
    expect(make([{ algorithm: 'concurrency', limit: 0, leaseMs: 1000 }])).toThrow(InvalidInputError);
    expect(make([{ algorithm: 'concurrency', limit: 2 }])).toThrow(InvalidInputError);
    expect(
      make([
        { algorithm: 'concurrency', limit: 2, leaseMs: 1000 },
        { algorithm: 'concurrency', limit: 3, leaseMs: 2000 },
      ]),
    ).toThrow(/at most one/);
  });
});

describe.each(backends().filter((b) => b !== 'memory'))('the deny cache on %s', (kind) => {
  it('never holds a concurrency denial: a released place is found at the next request', async () => {
    const gate = await openTollgate(kind, 'concurrency-deny', { policies: POLICIES, denyCache: true });
    try {
      const ip = `ip:deny-${kind}-${process.pid}`;
      const taken = [await gate.tg.limits.admit(ip, { policy: 'uploads' }), await gate.tg.limits.admit(ip, { policy: 'uploads' })];
      expect(await gate.tg.limits.admit(ip, { policy: 'uploads' })).toMatchObject({ allowed: false, reason: 'concurrency' });
      expect(gate.tg.limits.denied(ip, { policy: 'uploads' })).toBeUndefined();
      await gate.tg.limits.release(ip, taken[0]!.allowed ? taken[0]!.lease! : '');
      expect(await gate.tg.limits.admit(ip, { policy: 'uploads' })).toMatchObject({ allowed: true });
    } finally {
      await gate.close();
    }
  });
});

describe.each(backends().filter((b) => b !== 'memory'))('concurrency limits on %s agree with the model', (kind) => {
  let redis: TestGate;
  beforeAll(async () => {
    redis = await openTollgate(kind, 'concurrency-prop', { policies: POLICIES });
  });
  afterAll(() => redis.close());

  it('leases taken, released, forgotten and expired', async () => {
    const action = fc.oneof(
      fc.record({ kind: fc.constant('admit' as const), cost: fc.integer({ min: 0, max: 3 }) }),
      fc.record({ kind: fc.constant('release' as const), which: fc.nat(20) }),
      fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 6_000 }) }),
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 30 }), async (actions) => {
        run += 1;
        const memory = await openTollgate('memory', 'concurrency-model', { policies: POLICIES });
        redis.clock.set(TEST_START + 9);
        memory.clock.set(TEST_START + 9);
        const subject = `ip:cprop-${kind}-${process.pid}-${run}`;
        const leases: string[] = [];
        for (const a of actions) {
          if (a.kind === 'wait') {
            redis.clock.advance(a.ms);
            memory.clock.advance(a.ms);
          } else if (a.kind === 'release') {
            const lease = leases[a.which % Math.max(1, leases.length)];
            if (lease) expect(await redis.tg.limits.release(subject, lease)).toBe(await memory.tg.limits.release(subject, lease));
          } else if (a.cost === 0) {
            expect(await redis.tg.limits.peek(subject, { policy: 'uploads' })).toEqual(await memory.tg.limits.peek(subject, { policy: 'uploads' }));
          } else {
            const got = await redis.tg.limits.admit(subject, { policy: 'uploads', cost: a.cost });
            expect(got).toEqual(await memory.tg.limits.admit(subject, { policy: 'uploads', cost: a.cost }));
            if (got.allowed && got.lease) leases.push(got.lease);
          }
        }
      }),
      { numRuns: 40 },
    );
  });
});

describe.each(FRAMEWORKS)('the %s middleware releases the place when the response is done', (_name, makeApp) => {
  it('one place: request after request passes, each freeing its place when its response is done', async () => {
    const tg = createTollgate({ memory: true, plans: PLANS });
    const id = `acct_mw_${process.pid}`;
    await tg.accounts.create(id, { plan: 'only' });
    const app = await makeApp(tg, { subject: () => id });
    try {
      for (let i = 0; i < 3; i++) expect((await get(app)).status).toBe(200);
      // The last response's place was freed once it finished.
      const deadline = Date.now() + 2_000;
      let peeked = await tg.limits.peek(id);
      while (peeked.windows[0]!.remaining !== 1 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        peeked = await tg.limits.peek(id);
      }
      expect(peeked.windows[0]).toMatchObject({ algorithm: 'concurrency', remaining: 1 });
    } finally {
      await app.close();
    }
  });
});
