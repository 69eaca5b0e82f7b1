// Per-key limits (docs/limits.md, "Per-key limits"): keys.issue(subject, { limits }) gives a
// key its own windows, checked together with its subject's, all or none, in the same round
// trip; keys.list shows them. On both clients and memory; the model is checked against Redis.
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Plan, SurfaceWindows } from '../src/index.ts';
import { InvalidInputError } from '../src/errors.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { TEST_START, backends, newAccount, openTollgate, type TestGate } from './helpers/tollgate.ts';

const plan = (limits: SurfaceWindows): Plan => ({ limits, credits: { allowance: 100, cycle: { days: 30 } }, holds: { cap: 1, maxItems: 10, surfaces: [] } });
const PLANS = { ...EXAMPLE_PLANS, team: plan({ api: [{ limit: 10, windowMs: 60_000 }], web: [{ limit: 10, windowMs: 60_000 }] }) };
const minute = (limit: number) => [{ limit, windowMs: 60_000 }];

describe.each(backends())('per-key limits through %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'keyLimits', { plans: PLANS });
  });
  afterAll(() => gate.close());
  beforeEach(() => {
    gate.clock.set(TEST_START + 15_000);
  });

  it("a key's own window denies it while the account and its other keys go on; both are counted", async () => {
    const id = await newAccount(gate.tg, 'team');
    const { key: ci } = await gate.tg.keys.issue(id, { name: 'ci', limits: { api: minute(3) } });
    const { key: app } = await gate.tg.keys.issue(id);
    for (let i = 1; i <= 3; i++) {
      const check = await gate.tg.keys.verify(ci);
      expect(check).toMatchObject({ valid: true, admission: { allowed: true } });
      if (check.valid)
        expect(check.admission.windows).toEqual([
          { limit: 10, remaining: 10 - i, resetMs: 45_000, windowMs: 60_000, algorithm: 'fixed' },
          { limit: 3, remaining: 3 - i, resetMs: 45_000, windowMs: 60_000, algorithm: 'fixed', key: true },
        ]);
    }
    const denied = await gate.tg.keys.verify(ci);
    expect(denied).toMatchObject({
      valid: true,
      admission: { allowed: false, reason: 'rate_limited', retryAfterMs: 45_000, rateLimit: { limit: 3, key: true } },
    });
    // The denial counted nothing on the account: 7 left for the other key.
    expect(await gate.tg.keys.verify(app)).toMatchObject({ valid: true, admission: { allowed: true, rateLimit: { limit: 10, remaining: 6 } } });
    // Another surface has no key window.
    expect(await gate.tg.keys.verify(ci, { surface: 'web' })).toMatchObject({
      valid: true,
      admission: { allowed: true, windows: [{ limit: 10, remaining: 9 }] },
    });
  });

  it('all or none: a request the account denies is not counted on the key', async () => {
    const id = await newAccount(gate.tg, 'team');
    const { key } = await gate.tg.keys.issue(id, {
      limits: {
        api: [
          { limit: 20, windowMs: 60_000 },
          { algorithm: 'bucket', limit: 1, windowMs: 1_000, burst: 15 },
        ],
      },
    });
    for (let i = 0; i < 10; i++) await gate.tg.limits.admit(id);
    const denied = await gate.tg.keys.verify(key, { cost: 2 });
    expect(denied).toMatchObject({
      valid: true,
      admission: { allowed: false, reason: 'rate_limited', windows: [{ remaining: 0 }, { remaining: 20, key: true }, { remaining: 15, key: true }] },
    });
  });

  it("the credit pre-check rides along; keys.list shows the key's windows", async () => {
    const id = await newAccount(gate.tg, 'team');
    const { key, keyId } = await gate.tg.keys.issue(id, { limits: { api: minute(2) } });
    expect(await gate.tg.keys.verify(key, { credits: 1 })).toMatchObject({
      valid: true,
      admission: { allowed: true, credits: { sufficient: true, balance: 100 } },
    });
    const [info] = await gate.tg.keys.list(id);
    expect(info).toMatchObject({ keyId, limits: { api: [{ limit: 2, windowMs: 60_000, algorithm: 'fixed' }] } });
  });

  it('a revoked or expired key leaves none of its fields behind', async ({ skip }) => {
    if (!gate.onRedis) skip("stored fields are Redis's");
    const id = await newAccount(gate.tg, 'team');
    const { key, keyId } = await gate.tg.keys.issue(id, { limits: { api: minute(2) } });
    await gate.tg.keys.verify(key);
    const { key: short, keyId: shortId } = await gate.tg.keys.issue(id, { ttlMs: 1_000, limits: { web: minute(2) } });
    await gate.tg.keys.verify(short, { surface: 'web' });
    const account = ((await gate.command(['KEYS', `${gate.prefix}*${id}*`])) as string[]).find((k) => !/:(cy|j|hi|ho|he|op)\b/.test(k))!;
    const fieldsOf = async (kid: string) => ((await gate.command(['HKEYS', account])) as string[]).filter((f) => f.startsWith(`k:${kid}`));
    expect((await fieldsOf(keyId)).length).toBe(4);
    expect(await gate.tg.keys.revoke(id, keyId)).toBe(true);
    expect(await fieldsOf(keyId)).toEqual([]);
    gate.clock.advance(1_000);
    expect(await gate.tg.keys.verify(short, { surface: 'web' })).toEqual({ ok: false, valid: false, reason: 'expired' });
    expect(await fieldsOf(shortId)).toEqual([]);
  });

  it('bad limits are a typed error', async () => {
    const id = await newAccount(gate.tg, 'team');
    await expect(gate.tg.keys.issue(id, { limits: { nope: minute(1) } })).rejects.toThrow(InvalidInputError);
    await expect(gate.tg.keys.issue(id, { limits: { api: [] } })).rejects.toThrow(InvalidInputError);
    await expect(gate.tg.keys.issue(id, { limits: { api: minute(0) } })).rejects.toThrow(InvalidInputError);
  });
});

describe.each(backends().filter((b) => b !== 'memory'))('per-key limits on %s agree with the model', (kind) => {
  let redis: TestGate;
  beforeAll(async () => {
    redis = await openTollgate(kind, 'keyLimits-prop', { plans: PLANS });
  });
  afterAll(() => redis.close());

  it('random verifies through a limited and an unlimited key and admits of the account', async () => {
    const step = fc.record({
      who: fc.constantFrom('limited', 'plain', 'account'),
      cost: fc.integer({ min: 0, max: 4 }),
      pause: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 30_000 })),
    });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        run += 1;
        const memory = await openTollgate('memory', 'keyLimits-model', { plans: PLANS });
        const subject = `acct_kl_${kind}_${process.pid}_${run}`;
        const keys: Record<string, { limited: string; plain: string }> = {};
        for (const [name, gate] of [
          ['redis', redis],
          ['memory', memory],
        ] as const) {
          gate.clock.set(TEST_START + 5);
          await gate.tg.accounts.create(subject, { plan: 'team' });
          const limited = await gate.tg.keys.issue(subject, {
            limits: {
              api: [
                { limit: 4, windowMs: 10_000, algorithm: 'sliding' },
                { algorithm: 'bucket', limit: 2, windowMs: 5_000, burst: 3 },
              ],
            },
          });
          const plain = await gate.tg.keys.issue(subject);
          keys[name] = { limited: limited.key, plain: plain.key };
        }
        for (const { who, cost, pause } of steps) {
          redis.clock.advance(pause);
          memory.clock.advance(pause);
          if (who === 'account') {
            if (cost === 0) expect(await redis.tg.limits.peek(subject)).toEqual(await memory.tg.limits.peek(subject));
            else expect(await redis.tg.limits.admit(subject, { cost })).toEqual(await memory.tg.limits.admit(subject, { cost }));
          } else {
            const c = Math.max(1, cost);
            const a = await redis.tg.keys.verify(keys.redis![who], { cost: c });
            const b = await memory.tg.keys.verify(keys.memory![who], { cost: c });
            expect(a.valid && b.valid).toBe(true);
            if (a.valid && b.valid) expect(a.admission).toEqual(b.admission);
          }
        }
      }),
      { numRuns: 30 },
    );
  });
});
