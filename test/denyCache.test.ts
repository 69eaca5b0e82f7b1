// The deny cache (createTollgate({ denyCache: true })): a verified key, or a policy
// subject, denied with 0 remaining is answered from this process's memory, with no Redis
// command, until the denial runs out by tollgate's clock; keyed by the key's digest so a
// forged key still reaches Redis; cleared by reset and changePlan in the same process;
// bounded. Through both clients (and on the cluster project).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Admission, Plan, Verification } from '../src/index.ts';
import { InvalidInputError } from '../src/errors.ts';
import { rateLimitHeaders } from '../src/http.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { openRecordingTollgate, type RecordingGate } from './helpers/recording.ts';
import { CLIENT_KINDS, TEST_START, accountId } from './helpers/tollgate.ts';

const MINUTE = 60_000;
const sliding: Plan = {
  limits: { api: [{ limit: 10, windowMs: MINUTE, algorithm: 'sliding' }] },
  credits: { allowance: 100, cycle: { days: 30 } },
  holds: { cap: 1, maxItems: 10, surfaces: [] },
};
const PLANS = { ...EXAMPLE_PLANS, sliding };
const POLICIES = { failed_auth: { attempts: [{ limit: 3, windowMs: MINUTE }] } };

function admissionOf(v: Verification): Admission {
  if (!v.valid) throw new Error(`expected a valid key, got ${v.reason}`);
  return v.admission;
}

describe.each(CLIENT_KINDS)('deny cache through %s', (kind) => {
  let gate: RecordingGate;
  let small: RecordingGate;
  let off: RecordingGate;
  beforeAll(async () => {
    gate = await openRecordingTollgate(kind, 'deny', { denyCache: true, plans: PLANS, policies: POLICIES });
    small = await openRecordingTollgate(kind, 'denysmall', { denyCache: { maxEntries: 2 }, policies: POLICIES });
    off = await openRecordingTollgate(kind, 'denyoff', { policies: POLICIES });
  });
  afterAll(async () => {
    await gate.close();
    await small.close();
    await off.close();
  });
  beforeEach(() => {
    for (const g of [gate, small, off]) {
      g.clock.set(TEST_START + 15_000);
      g.recorder.clear();
    }
  });

  /** An account with a key whose api window is used up; the last verify was denied (and cached). */
  async function deniedKey(g: RecordingGate = gate, plan = 'free') {
    const id = accountId();
    await g.tg.accounts.create(id, { plan });
    const { key, keyId } = await g.tg.keys.issue(id);
    await g.tg.limits.admit(id, { cost: 30 });
    const denial = admissionOf(await g.tg.keys.verify(key));
    expect(denial).toMatchObject({ ok: false, allowed: false, reason: 'rate_limited', rateLimit: { remaining: 0 }, retryAfterMs: 45_000 });
    g.recorder.clear();
    return { id, key, keyId, denial };
  }
  const ip = () => `ip:${accountId('198.51.100')}`;
  const attempt = (g: RecordingGate, subject: string) => g.tg.limits.admit(subject, { policy: 'failed_auth', surface: 'attempts' });
  async function deniedIp(g: RecordingGate) {
    const subject = ip();
    for (let i = 0; i < 3; i++) await attempt(g, subject);
    expect(await attempt(g, subject)).toMatchObject({ ok: false, allowed: false, retryAfterMs: 45_000 });
    g.recorder.clear();
    return subject;
  }

  it('a verified key denied with 0 remaining is answered from memory with no Redis command, the same headers counting down, until the denial runs out; then Redis again', async () => {
    const { id, key, keyId, denial } = await deniedKey();
    for (const elapsed of [0, 1, 10_000, 44_999]) {
      gate.clock.set(TEST_START + 15_000 + elapsed);
      const cached = await gate.tg.keys.verify(key);
      expect(gate.sent, `at +${elapsed} ms`).toEqual([]);
      const counted = (w: Admission['rateLimit']) => ({ ...w, resetMs: w.resetMs - elapsed });
      expect(cached).toEqual({
        ok: true,
        valid: true,
        subject: id,
        keyId,
        admission: { ...denial, rateLimit: counted(denial.rateLimit), windows: denial.windows.map(counted), retryAfterMs: 45_000 - elapsed },
      });
      // What memory answers is what Redis holds at that instant.
      const fromRedis = await gate.tg.limits.peek(id);
      expect(rateLimitHeaders(admissionOf(cached))).toEqual(rateLimitHeaders(fromRedis));
      gate.recorder.clear();
    }
    gate.clock.set(TEST_START + MINUTE);
    expect(await gate.tg.keys.verify(key)).toMatchObject({ ok: true, valid: true, admission: { ok: true, allowed: true, rateLimit: { remaining: 29 } } });
    expect(gate.sent.map((c) => c.script)).toEqual(['verifyKey']);
  });

  it('a flood from one denied key costs Redis nothing', async () => {
    const { key } = await deniedKey();
    for (let i = 0; i < 100; i++) expect(admissionOf(await gate.tg.keys.verify(key, { credits: 1 })).allowed).toBe(false);
    expect(gate.sent).toEqual([]);
  });

  it("is keyed by the key's digest: a forged key for the same subject is still checked in Redis and is valid:false", async () => {
    const { key } = await deniedKey();
    const forged = key.slice(0, -32) + 'f'.repeat(32);
    expect(await gate.tg.keys.verify(forged)).toEqual({ ok: false, valid: false, reason: 'unknown' });
    expect(await gate.tg.keys.verify(forged)).toEqual({ ok: false, valid: false, reason: 'unknown' });
    expect(gate.sent.map((c) => c.script)).toEqual(['verifyKey', 'verifyKey']);
  });

  it("another real key of the same subject is not answered by the first key's entry", async () => {
    const { id, key } = await deniedKey();
    const second = await gate.tg.keys.issue(id);
    gate.recorder.clear();
    expect(admissionOf(await gate.tg.keys.verify(second.key)).allowed).toBe(false);
    expect(gate.sent.map((c) => c.script)).toEqual(['verifyKey']);
    await gate.tg.keys.verify(key);
    await gate.tg.keys.verify(second.key);
    expect(gate.sent).toHaveLength(1);
  });

  it('an entry answers only its surface: the key still goes to Redis on web', async () => {
    const { key } = await deniedKey();
    expect(admissionOf(await gate.tg.keys.verify(key, { surface: 'web' })).allowed).toBe(true);
    expect(gate.sent.map((c) => c.script)).toEqual(['verifyKey']);
  });

  it("a policy subject's denial is cached the same way, and limits.denied() returns it from memory", async () => {
    const subject = await deniedIp(gate);
    gate.clock.advance(5_000);
    expect(gate.tg.limits.denied(subject, { policy: 'failed_auth', surface: 'attempts' })).toMatchObject({
      ok: false,
      allowed: false,
      reason: 'rate_limited',
      rateLimit: { remaining: 0, resetMs: 40_000 },
      retryAfterMs: 40_000,
    });
    expect(await attempt(gate, subject)).toMatchObject({ ok: false, allowed: false, retryAfterMs: 40_000 });
    expect(gate.sent).toEqual([]);
    gate.clock.advance(40_000);
    expect(gate.tg.limits.denied(subject, { policy: 'failed_auth', surface: 'attempts' })).toBeUndefined();
    expect(await attempt(gate, subject)).toMatchObject({ ok: true, allowed: true, rateLimit: { remaining: 2 } });
    expect(gate.sent).toHaveLength(1);
  });

  it('limits.denied() is undefined for a subject that was not denied, and checks the policy name', () => {
    expect(gate.tg.limits.denied(ip(), { policy: 'failed_auth', surface: 'attempts' })).toBeUndefined();
    expect(() => gate.tg.limits.denied(ip(), { policy: 'nope' })).toThrowError(InvalidInputError);
    expect(gate.sent).toEqual([]);
  });

  it("limits.reset in the same process clears the subject's entries (keys and policies)", async () => {
    const { id, key } = await deniedKey();
    await gate.tg.limits.reset(id);
    gate.recorder.clear();
    expect(admissionOf(await gate.tg.keys.verify(key))).toMatchObject({ ok: true, allowed: true, rateLimit: { remaining: 29 } });
    const subject = await deniedIp(gate);
    await gate.tg.limits.reset(subject, { policy: 'failed_auth', surface: 'attempts' });
    expect(gate.tg.limits.denied(subject, { policy: 'failed_auth', surface: 'attempts' })).toBeUndefined();
    expect((await attempt(gate, subject)).allowed).toBe(true);
  });

  it("accounts.changePlan in the same process clears the subject's entries: the new budget applies at once", async () => {
    const { id, key } = await deniedKey();
    await gate.tg.accounts.changePlan(id, 'starter');
    gate.recorder.clear();
    expect(admissionOf(await gate.tg.keys.verify(key))).toMatchObject({ ok: true, allowed: true, rateLimit: { limit: 100, remaining: 69 } });
    expect(gate.sent).toHaveLength(1);
  });

  it("keys.revoke in the same process clears the subject's entries: the revoked key is refused by Redis", async () => {
    const { id, key, keyId } = await deniedKey();
    await gate.tg.keys.revoke(id, keyId);
    expect(await gate.tg.keys.verify(key)).toEqual({ ok: false, valid: false, reason: 'unknown' });
  });

  it('only a denial with 0 remaining is cached: a costly request denied with room left goes to Redis each time', async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'free' });
    const { key } = await gate.tg.keys.issue(id);
    await gate.tg.limits.admit(id, { cost: 28 });
    gate.recorder.clear();
    for (let i = 0; i < 3; i++)
      expect(admissionOf(await gate.tg.keys.verify(key, { cost: 5 }))).toMatchObject({ ok: false, allowed: false, rateLimit: { remaining: 2 } });
    expect(gate.sent).toHaveLength(3);
    expect(admissionOf(await gate.tg.keys.verify(key, { cost: 2 })).allowed).toBe(true);
  });

  it('cost_exceeds_limit is never cached', async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'free' });
    const { key } = await gate.tg.keys.issue(id);
    gate.recorder.clear();
    for (let i = 0; i < 2; i++)
      expect(admissionOf(await gate.tg.keys.verify(key, { cost: 31 }))).toMatchObject({ ok: false, allowed: false, reason: 'cost_exceeds_limit' });
    expect(gate.sent).toHaveLength(2);
    expect(admissionOf(await gate.tg.keys.verify(key)).allowed).toBe(true);
  });

  it('a cached sliding denial of a costly request never refuses a cheaper request that Redis would admit', async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'sliding' });
    const { key } = await gate.tg.keys.issue(id);
    await gate.tg.limits.admit(id, { cost: 10 });
    // Next window, 0 ms in: the estimate is 10, nothing left; cost 5 fits only after 24 s.
    gate.clock.set(TEST_START + MINUTE);
    expect(admissionOf(await gate.tg.keys.verify(key, { cost: 5 }))).toMatchObject({
      ok: false,
      allowed: false,
      rateLimit: { remaining: 0 },
      retryAfterMs: 24_001,
    });
    gate.clock.set(TEST_START + MINUTE + 10_000);
    // 10 s in the estimate is floor(10 x 5/6) = 8: one more fits.
    expect(admissionOf(await gate.tg.keys.verify(key, { cost: 1 }))).toMatchObject({ ok: true, allowed: true, rateLimit: { remaining: 1 } });
  });

  it('a sliding denial of cost 1 is cached until its retry: no cheaper request could fit before', async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'sliding' });
    const { key } = await gate.tg.keys.issue(id);
    await gate.tg.limits.admit(id, { cost: 10 });
    gate.clock.set(TEST_START + MINUTE);
    const denial = admissionOf(await gate.tg.keys.verify(key));
    // floor(10 x (60000 - t) / 60000) <= 9 first at t = 1.
    expect(denial).toMatchObject({ ok: false, allowed: false, retryAfterMs: 1 });
    gate.recorder.clear();
    expect(admissionOf(await gate.tg.keys.verify(key, { cost: 3 })).allowed).toBe(false);
    expect(gate.sent).toEqual([]);
    gate.clock.advance(1);
    expect(admissionOf(await gate.tg.keys.verify(key)).allowed).toBe(true);
    expect(gate.sent).toHaveLength(1);
  });

  it('is bounded: past maxEntries the oldest entry is dropped', async () => {
    const [a, b, c] = [await deniedIp(small), await deniedIp(small), await deniedIp(small)];
    const isDenied = (s: string) => small.tg.limits.denied(s, { policy: 'failed_auth', surface: 'attempts' }) !== undefined;
    expect([a, b, c].map(isDenied)).toEqual([false, true, true]);
    // a is asked of Redis again, denied, and remembered; now b is the oldest.
    expect((await attempt(small, a)).allowed).toBe(false);
    expect(small.sent).toHaveLength(1);
    expect([a, b, c].map(isDenied)).toEqual([true, false, true]);
  });

  it('is off by default: every request of a denied key goes to Redis and limits.denied() is undefined', async () => {
    const { key } = await deniedKey(off);
    for (let i = 0; i < 3; i++) await off.tg.keys.verify(key);
    expect(off.sent).toHaveLength(3);
    const subject = await deniedIp(off);
    expect(off.tg.limits.denied(subject, { policy: 'failed_auth', surface: 'attempts' })).toBeUndefined();
    await attempt(off, subject);
    expect(off.sent).toHaveLength(1);
  });
});
