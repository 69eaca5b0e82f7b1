// Policies (docs/concepts.md#vocabulary): named windows that limit subjects without an account (sign-in attempts
// per IP), storing nothing but expiring counters. Through both clients (and on the cluster
// project).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AccountNotFoundError, InvalidInputError } from '../src/errors.ts';
import { openRecordingTollgate, storedKeys, type RecordingGate } from './helpers/recording.ts';
import { TEST_START, backends, accountId } from './helpers/tollgate.ts';

const POLICIES = {
  anonymous: { api: [{ limit: 3, windowMs: 60_000 }] },
  failed_auth: { attempts: [{ limit: 10, windowMs: 60_000 }] },
  layered: {
    api: [
      { limit: 2, windowMs: 10_000 },
      { limit: 5, windowMs: 60_000, algorithm: 'sliding' as const },
    ],
  },
};

describe.each(backends())('policies through %s', (kind) => {
  let gate: RecordingGate;
  beforeAll(async () => {
    gate = await openRecordingTollgate(kind, 'policies', { policies: POLICIES });
  });
  afterAll(() => gate.close());
  beforeEach(() => {
    gate.clock.set(TEST_START + 15_000);
    gate.recorder.clear();
  });

  /** A fresh client address as a subject. */
  const ip = () => `ip:${accountId('203.0.113')}`;

  it('a policy limits a subject that has no account: its windows admit, then deny until the reset', async () => {
    const subject = ip();
    for (let remaining = 2; remaining >= 0; remaining--) {
      expect(await gate.tg.limits.admit(subject, { policy: 'anonymous' })).toEqual({
        ok: true,
        allowed: true,
        rateLimit: { limit: 3, remaining, resetMs: 45_000, windowMs: 60_000, algorithm: 'fixed' },
        windows: [{ limit: 3, remaining, resetMs: 45_000, windowMs: 60_000, algorithm: 'fixed' }],
      });
    }
    expect(await gate.tg.limits.admit(subject, { policy: 'anonymous' })).toMatchObject({
      ok: false,
      allowed: false,
      reason: 'rate_limited',
      retryAfterMs: 45_000,
    });
    gate.clock.advance(45_000);
    expect(await gate.tg.limits.admit(subject, { policy: 'anonymous' })).toMatchObject({ ok: true, allowed: true, rateLimit: { remaining: 2 } });
  });

  it('a policy admit is one command: the windows travel with it, nothing is looked up', async () => {
    await gate.tg.limits.admit(ip(), { policy: 'layered' });
    if (gate.onRedis) expect(gate.sent.map((c) => c.script)).toEqual(['admitPolicy']);
  });

  it('the same subject without a policy is AccountNotFoundError: it has no account', async () => {
    const subject = ip();
    await gate.tg.limits.admit(subject, { policy: 'anonymous' });
    await expect(gate.tg.limits.admit(subject)).rejects.toThrowError(AccountNotFoundError);
  });

  // What Redis stores: memory has no keys.
  it.skipIf(kind === 'memory')('a policy stores nothing but its counts: one expiring key per policy and surface, kept two of its longest window', async () => {
    const subject = ip();
    for (let i = 0; i < 3; i++) await gate.tg.limits.admit(subject, { policy: 'layered' });
    await gate.tg.limits.peek(subject, { policy: 'layered' });
    gate.clock.advance(10_000);
    for (let i = 0; i < 4; i++) await gate.tg.limits.admit(subject, { policy: 'layered' });
    for (let i = 0; i < 4; i++) await gate.tg.limits.admit(subject, { policy: 'anonymous' });
    const keys = await storedKeys(gate.command, gate.prefix, subject);
    // layered's 10 s and sliding minute windows in one key; anonymous's one minute in another.
    expect(keys.sort()).toEqual([`${gate.prefix}:{${subject}}:r:anonymous.api`, `${gate.prefix}:{${subject}}:r:layered.api`]);
    for (const key of keys) {
      expect(await gate.command(['TYPE', key])).toBe('string');
      const ttl = Number(await gate.command(['PTTL', key]));
      expect(ttl, key).toBeGreaterThan(60_000);
      expect(ttl, key).toBeLessThanOrEqual(2 * 60_000);
    }
  });

  it('an idle policy subject stores nothing: peek, reset and a cost it can never fit write no key', async () => {
    const subject = ip();
    expect((await gate.tg.limits.peek(subject, { policy: 'layered' })).windows.map((w) => w.remaining)).toEqual([2, 5]);
    await gate.tg.limits.reset(subject, { policy: 'layered' });
    expect(await gate.tg.limits.admit(subject, { policy: 'anonymous', cost: 4 })).toMatchObject({ ok: false, allowed: false, reason: 'cost_exceeds_limit' });
    if (gate.onRedis) expect(await storedKeys(gate.command, gate.prefix, subject)).toEqual([]);
  });

  it("a subject's policy counts apart from its account's plan and from other policies", async () => {
    const id = accountId();
    await gate.tg.accounts.create(id, { plan: 'free' });
    for (let i = 0; i < 3; i++) await gate.tg.limits.admit(id, { policy: 'anonymous' });
    expect((await gate.tg.limits.admit(id, { policy: 'anonymous' })).allowed).toBe(false);
    expect(await gate.tg.limits.admit(id)).toMatchObject({ ok: true, allowed: true, rateLimit: { limit: 30, remaining: 29 } });
    expect(await gate.tg.limits.admit(id, { policy: 'layered' })).toMatchObject({ ok: true, allowed: true, windows: [{ remaining: 1 }, { remaining: 4 }] });
    expect(await gate.tg.limits.admit(id, { policy: 'failed_auth', surface: 'attempts' })).toMatchObject({
      ok: true,
      allowed: true,
      rateLimit: { limit: 10, remaining: 9 },
    });
  });

  it('cost counts with a policy as with a plan', async () => {
    const subject = ip();
    expect(await gate.tg.limits.admit(subject, { policy: 'failed_auth', surface: 'attempts', cost: 4 })).toMatchObject({
      ok: true,
      allowed: true,
      rateLimit: { remaining: 6 },
    });
    expect(await gate.tg.limits.admit(subject, { policy: 'failed_auth', surface: 'attempts', cost: 7 })).toMatchObject({
      ok: false,
      allowed: false,
      rateLimit: { remaining: 6 },
    });
  });

  it("peek reads a policy subject without counting; reset clears only that policy's surface", async () => {
    const subject = ip();
    await gate.tg.limits.admit(subject, { policy: 'anonymous' });
    await gate.tg.limits.admit(subject, { policy: 'failed_auth', surface: 'attempts' });
    for (let i = 0; i < 3; i++) expect((await gate.tg.limits.peek(subject, { policy: 'anonymous' })).rateLimit.remaining).toBe(2);
    await gate.tg.limits.reset(subject, { policy: 'anonymous' });
    expect((await gate.tg.limits.peek(subject, { policy: 'anonymous' })).rateLimit.remaining).toBe(3);
    expect((await gate.tg.limits.peek(subject, { policy: 'failed_auth', surface: 'attempts' })).rateLimit.remaining).toBe(9);
  });

  it('a credit pre-check with a policy is an InvalidInputError (credits need an account), before Redis is touched', async () => {
    const subject = ip();
    await expect(gate.tg.limits.admit(subject, { policy: 'anonymous', credits: 1 })).rejects.toThrowError(InvalidInputError);
    await expect(gate.tg.limits.admit(subject, { policy: 'anonymous', credits: 1 })).rejects.toThrowError(/credit pre-check needs an account/);
    if (gate.onRedis) expect(gate.sent).toEqual([]);
  });

  it('an unknown policy, or a surface the policy does not have, is an InvalidInputError before Redis is touched', async () => {
    const subject = ip();
    await expect(gate.tg.limits.admit(subject, { policy: 'nope' })).rejects.toThrowError(
      'Unknown policy "nope"; known policies: anonymous, failed_auth, layered',
    );
    await expect(gate.tg.limits.admit(subject, { policy: 'toString' })).rejects.toThrowError(InvalidInputError);
    await expect(gate.tg.limits.admit(subject, { policy: 'anonymous', surface: 'web' })).rejects.toThrowError(
      'Policy "anonymous" has no surface "web" (it has api)',
    );
    await expect(gate.tg.limits.peek(subject, { policy: 'nope' })).rejects.toThrowError(InvalidInputError);
    await expect(gate.tg.limits.reset(subject, { policy: 'failed_auth' })).rejects.toThrowError(InvalidInputError);
    if (gate.onRedis) expect(gate.sent).toEqual([]);
  });
});
