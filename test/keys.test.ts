// API keys (docs/example-service.md): issued per subject and shown once, stored only as a
// digest, verified together with the admit and the credit pre-check in one script; a key that
// is malformed, unknown, revoked, expired or not for the surface counts nothing on the
// subject. Through both clients (and on the cluster project).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isTollgateError } from '../src/index.ts';
import { AccountNotFoundError, KeyLimitError } from '../src/errors.ts';
import { keyDigest } from '../src/rules/keys.ts';
import { SubjectKeys } from '../src/redisKeys.ts';
import { openRecordingTollgate, storedKeys, type RecordingGate } from './helpers/recording.ts';
import { TEST_START, backends, accountId, newAccount } from './helpers/tollgate.ts';

/** HGETALL as a flat list (node-redis may answer with an object). */
const flat = (reply: unknown): string[] => (Array.isArray(reply) ? reply.map(String) : Object.entries(reply as Record<string, string>).flat());

const KEY = /^tgk_(.+)_([0-9a-f]{10})_([0-9a-f]{32})$/;

describe.each(backends())('API keys through %s', (kind) => {
  let gate: RecordingGate;
  beforeAll(async () => {
    gate = await openRecordingTollgate(kind, 'keys', { keys: { maxKeys: 3, maxExpiringKeys: 2 } });
  });
  afterAll(() => gate.close());
  beforeEach(() => {
    gate.clock.set(TEST_START + 15_000);
    gate.recorder.clear();
  });

  async function account(plan = 'free') {
    const id = await newAccount(gate.tg, plan);
    gate.recorder.clear();
    return id;
  }
  // Keys live in the subject's account hash, as 'k:<keyId>' (lua/lib/apiKeys.lua).
  const accountOf = (id: string) => new SubjectKeys(gate.prefix, id).account;
  /** What a subject's windows show on both surfaces (a read that counts nothing). */
  const remaining = async (id: string) => [
    (await gate.tg.limits.peek(id, { surface: 'api' })).rateLimit.remaining,
    (await gate.tg.limits.peek(id, { surface: 'web' })).rateLimit.remaining,
  ];

  describe('issue', () => {
    it('returns the key once, naming its subject and key id: tgk_<subject>_<keyId>_<secret>', async () => {
      const id = await account();
      const issued = await gate.tg.keys.issue(id, { name: 'ci' });
      expect(issued).toEqual({ key: expect.stringMatching(KEY), keyId: expect.stringMatching(/^[0-9a-f]{10}$/), createdAt: gate.clock.now, expiresAt: null });
      const [, subject, keyId] = KEY.exec(issued.key)!;
      expect([subject, keyId]).toEqual([id, issued.keyId]);
      if (gate.onRedis) expect(gate.sent.map((c) => c.script)).toEqual(['issueKey']);
      // Two keys never share a key id or a secret.
      const second = await gate.tg.keys.issue(id);
      expect(second.keyId).not.toBe(issued.keyId);
      expect(KEY.exec(second.key)![3]).not.toBe(KEY.exec(issued.key)![3]);
    });

    // What Redis stores: memory has no keys to read.
    it.skipIf(kind === 'memory')("only a digest is stored: neither the key nor its secret appears anywhere among the subject's keys", async () => {
      const id = await account();
      const { key, keyId } = await gate.tg.keys.issue(id, { name: 'deploy bot' });
      await gate.tg.keys.verify(key);
      const secret = KEY.exec(key)![3]!;
      const stored: string[] = [];
      for (const k of await storedKeys(gate.command, gate.prefix, id)) {
        const type = await gate.command(['TYPE', k]);
        if (type === 'hash') stored.push(...flat(await gate.command(['HGETALL', k])));
        else if (type === 'string') stored.push(String(await gate.command(['GET', k])));
        else throw new Error(`unexpected ${String(type)} ${k}`);
      }
      const everything = stored.join('\n');
      expect(everything).not.toContain(secret);
      expect(everything).not.toContain(key);
      expect(everything).not.toContain(secret.slice(0, 16));
      const record = String(await gate.command(['HGET', accountOf(id), `k:${keyId}`]));
      expect(record.split(' ')[0]).toBe(keyDigest(key));
    });

    it('a key for a subject without an account is AccountNotFoundError', async () => {
      await expect(gate.tg.keys.issue(accountId('nobody'))).rejects.toThrowError(AccountNotFoundError);
    });

    it('keys.parse reads the subject and key id from the key alone, sending nothing', async () => {
      const id = await account();
      const { key, keyId } = await gate.tg.keys.issue(id);
      gate.recorder.clear();
      expect(gate.tg.keys.parse(key)).toEqual({ subject: id, keyId });
      expect(gate.tg.keys.parse('not a key')).toBeNull();
      if (gate.onRedis) expect(gate.sent).toEqual([]);
    });
  });

  describe('verify', () => {
    it('checks the key, admits and pre-checks credits in ONE command', async () => {
      const id = await account();
      const { key, keyId } = await gate.tg.keys.issue(id);
      gate.recorder.clear();
      expect(await gate.tg.keys.verify(key, { surface: 'api', credits: 1 })).toEqual({
        ok: true,
        valid: true,
        subject: id,
        keyId,
        admission: {
          ok: true,
          allowed: true,
          rateLimit: { limit: 30, remaining: 29, resetMs: 45_000, windowMs: 60_000, algorithm: 'fixed' },
          windows: [{ limit: 30, remaining: 29, resetMs: 45_000, windowMs: 60_000, algorithm: 'fixed' }],
          credits: { sufficient: true, balance: 30, needed: 1, available: 30 },
        },
      });
      if (gate.onRedis) expect(gate.sent.map((c) => c.script)).toEqual(['verifyKey']);
      if (gate.onRedis) expect(gate.sent[0]!.words[0]).toMatch(/^(FCALL|EVALSHA|EVAL)$/);
    });

    it("counts on the key's subject, with cost, like limits.admit", async () => {
      const id = await account();
      const { key } = await gate.tg.keys.issue(id);
      expect(await gate.tg.keys.verify(key, { cost: 3 })).toMatchObject({
        ok: true,
        valid: true,
        admission: { ok: true, allowed: true, rateLimit: { remaining: 27 } },
      });
      expect(await remaining(id)).toEqual([27, 30]);
    });

    it("a valid key over its subject's limit is valid with a denial, and the denial counts nothing", async () => {
      const id = await account();
      const { key } = await gate.tg.keys.issue(id);
      await gate.tg.limits.admit(id, { cost: 30 });
      expect(await gate.tg.keys.verify(key)).toMatchObject({
        ok: true,
        valid: true,
        admission: { ok: false, allowed: false, reason: 'rate_limited', retryAfterMs: 45_000 },
      });
      gate.clock.advance(45_000);
      expect(await gate.tg.keys.verify(key)).toMatchObject({ ok: true, valid: true, admission: { ok: true, allowed: true, rateLimit: { remaining: 29 } } });
    });

    it('with usage: true it returns the usage in one command and counts nothing', async () => {
      const id = await account();
      const { key, keyId } = await gate.tg.keys.issue(id);
      await gate.tg.keys.verify(key);
      gate.recorder.clear();
      for (let i = 0; i < 3; i++) {
        expect(await gate.tg.keys.verify(key, { usage: true })).toMatchObject({
          ok: true,
          valid: true,
          subject: id,
          keyId,
          usage: { plan: 'free', credits: { balance: 30 }, rateLimit: { surface: 'api', limit: 30, remaining: 29 } },
        });
      }
      if (gate.onRedis) expect(gate.sent.map((c) => c.script)).toEqual(['usage', 'usage', 'usage']);
      expect(await remaining(id)).toEqual([29, 30]);
    });

    const malformed: Array<[string, (key: string, id: string) => unknown]> = [
      ['an empty string', () => ''],
      ['the prefix alone', () => 'tgk_'],
      ['another prefix', (key) => `sk${key.slice(3)}`],
      ['no secret', (key) => key.slice(0, key.lastIndexOf('_'))],
      ['a secret one digit short', (key) => key.slice(0, -1)],
      ['a secret in upper case', (key) => key.slice(0, -32) + key.slice(-32).toUpperCase()],
      ['a key id of 9 digits', (key, id) => `tgk_${id}_${'a'.repeat(9)}_${key.slice(-32)}`],
      ['a subject with a brace', (key) => `tgk_a{b}_${key.slice(-43)}`],
      ['300 characters', (key, id) => `tgk_${id}${'x'.repeat(300)}_${key.slice(-43)}`],
      ['a number', () => 12345],
      ['undefined', () => undefined],
    ];
    it.each(malformed)('a malformed key (%s) is valid:false, malformed, and sends no command at all', async (_, make) => {
      const id = await account();
      const { key } = await gate.tg.keys.issue(id);
      gate.recorder.clear();
      const bad = make(key, id) as string;
      expect(await gate.tg.keys.verify(bad)).toEqual({ ok: false, valid: false, reason: 'malformed' });
      expect(await gate.tg.keys.verify(bad, { usage: true })).toEqual({ ok: false, valid: false, reason: 'malformed' });
      if (gate.onRedis) expect(gate.sent).toEqual([]);
    });

    /** Refused in Redis with the reason, on admit and usage alike; nothing counted on the subject. */
    async function expectRefused(id: string, key: string, reason: string, surface = 'api') {
      const before = await remaining(id);
      gate.recorder.clear();
      expect(await gate.tg.keys.verify(key, { surface, credits: 1 })).toEqual({ ok: false, valid: false, reason });
      expect(await gate.tg.keys.verify(key, { surface, cost: 5 })).toEqual({ ok: false, valid: false, reason });
      if (gate.onRedis) expect(gate.sent.map((c) => c.script)).toEqual(['verifyKey', 'verifyKey']);
      expect(await gate.tg.keys.verify(key, { surface, usage: true })).toEqual({ ok: false, valid: false, reason });
      expect(await remaining(id)).toEqual(before);
    }

    it('an unknown key of a real subject is valid:false, unknown, and counts nothing', async () => {
      const id = await account();
      await gate.tg.keys.issue(id);
      await expectRefused(id, `tgk_${id}_${randomBytes(5).toString('hex')}_${randomBytes(16).toString('hex')}`, 'unknown');
    });

    it('a real key id with a wrong secret is unknown too, and counts nothing', async () => {
      const id = await account();
      const { key } = await gate.tg.keys.issue(id);
      await expectRefused(id, key.slice(0, -32) + randomBytes(16).toString('hex'), 'unknown');
    });

    it("a key names its subject: another subject's key id and secret under this subject are unknown", async () => {
      const owner = await account();
      const other = await account();
      const { key } = await gate.tg.keys.issue(owner);
      await gate.tg.keys.issue(other);
      await expectRefused(other, key.replace(owner, other), 'unknown');
      expect((await gate.tg.keys.verify(key)).valid).toBe(true);
    });

    it('a revoked key stops working at once: unknown, counting nothing; revoke says whether it existed', async () => {
      const id = await account();
      const { key, keyId } = await gate.tg.keys.issue(id);
      expect((await gate.tg.keys.verify(key)).valid).toBe(true);
      expect(await gate.tg.keys.revoke(id, keyId)).toBe(true);
      await expectRefused(id, key, 'unknown');
      expect(await gate.tg.keys.revoke(id, keyId)).toBe(false);
    });

    it('a key used on a surface it may not use is surface_not_allowed and counts nothing', async () => {
      const id = await account();
      const session = await gate.tg.keys.issue(id, { surfaces: ['web'], ttlMs: 3_600_000 });
      await expectRefused(id, session.key, 'surface_not_allowed', 'api');
      expect(await gate.tg.keys.verify(session.key, { surface: 'web' })).toMatchObject({
        ok: true,
        valid: true,
        admission: { ok: true, allowed: true, rateLimit: { remaining: 29 } },
      });
      expect(await remaining(id)).toEqual([30, 29]);
    });

    it('expiry is checked inside the script by the injected clock: valid 1 ms before expiresAt, expired at it', async () => {
      const id = await account();
      const issued = await gate.tg.keys.issue(id, { ttlMs: 60_000 });
      expect(issued.expiresAt).toBe(gate.clock.now + 60_000);
      gate.clock.set(issued.expiresAt! - 1);
      expect((await gate.tg.keys.verify(issued.key)).valid).toBe(true);
      gate.clock.set(issued.expiresAt!);
      expect(await gate.tg.keys.verify(issued.key)).toEqual({ ok: false, valid: false, reason: 'expired' });
      // The expired key is deleted on the way; afterwards it is simply unknown.
      if (gate.onRedis) expect(await gate.command(['HGET', accountOf(id), `k:${issued.keyId}`])).toBeNull();
      await expectRefused(id, issued.key, 'unknown');
    });

    it('an expired key is refused on usage reads too, counting nothing', async () => {
      const id = await account();
      const issued = await gate.tg.keys.issue(id, { ttlMs: 1_000 });
      gate.clock.advance(1_000);
      expect(await gate.tg.keys.verify(issued.key, { usage: true })).toEqual({ ok: false, valid: false, reason: 'expired' });
    });

    // An account deleted behind tollgate's back: only Redis can lose one so.
    it.skipIf(kind === 'memory')('a key whose account is gone is valid:false', async () => {
      const id = await account();
      const { key } = await gate.tg.keys.issue(id);
      await gate.command(['DEL', new SubjectKeys(gate.prefix, id).account]);
      expect(await gate.tg.keys.verify(key)).toEqual({ ok: false, valid: false, reason: 'unknown' });
      expect(await gate.tg.keys.verify(key, { credits: 1 })).toEqual({ ok: false, valid: false, reason: 'unknown' });
      expect(await gate.tg.keys.verify(key, { usage: true })).toEqual({ ok: false, valid: false, reason: 'unknown' });
    });
  });

  describe('bounds and list', () => {
    it('expiring keys beyond maxExpiringKeys evict the soonest-expiring one', async () => {
      const id = await account();
      const lasting = await gate.tg.keys.issue(id);
      const a = await gate.tg.keys.issue(id, { ttlMs: 30_000 });
      const b = await gate.tg.keys.issue(id, { ttlMs: 10_000 });
      const c = await gate.tg.keys.issue(id, { ttlMs: 20_000 });
      expect(await gate.tg.keys.verify(b.key)).toEqual({ ok: false, valid: false, reason: 'unknown' });
      expect((await gate.tg.keys.list(id)).map((k) => k.keyId).sort()).toEqual([lasting.keyId, a.keyId, c.keyId].sort());
      // Time moves on: c (20 s) now expires before a (30 s), so c gives way.
      gate.clock.advance(5_000);
      const d = await gate.tg.keys.issue(id, { ttlMs: 60_000 });
      for (const k of [lasting, a, d]) expect((await gate.tg.keys.verify(k.key)).valid, k.keyId).toBe(true);
      expect(await gate.tg.keys.verify(c.key)).toEqual({ ok: false, valid: false, reason: 'unknown' });
    });

    it('keys that never expire beyond maxKeys throw KeyLimitError; expiring keys do not count; revoking frees a place', async () => {
      const id = await account();
      const keys = [await gate.tg.keys.issue(id), await gate.tg.keys.issue(id), await gate.tg.keys.issue(id)];
      const refused = gate.tg.keys.issue(id);
      await expect(refused).rejects.toThrowError(KeyLimitError);
      await refused.catch((error: unknown) => {
        expect(isTollgateError(error, 'key_limit')).toBe(true);
        expect(error).toMatchObject({ subject: id, max: 3 });
      });
      expect((await gate.tg.keys.issue(id, { ttlMs: 60_000 })).expiresAt).not.toBeNull();
      for (const k of keys) expect((await gate.tg.keys.verify(k.key)).valid).toBe(true);
      await gate.tg.keys.revoke(id, keys[0]!.keyId);
      expect((await gate.tg.keys.issue(id)).expiresAt).toBeNull();
    });

    it('list shows each live key oldest first, never a digest, and hides expired keys', async () => {
      const id = await account();
      const first = await gate.tg.keys.issue(id, { name: 'ci' });
      gate.clock.advance(1_000);
      const session = await gate.tg.keys.issue(id, { ttlMs: 10_000, surfaces: ['web'] });
      gate.clock.advance(1_000);
      const third = await gate.tg.keys.issue(id, { name: 'deploy bot', surfaces: ['api', 'web'] });
      const listed = await gate.tg.keys.list(id);
      expect(listed).toEqual([
        { keyId: first.keyId, name: 'ci', createdAt: TEST_START + 15_000, expiresAt: null, surfaces: null },
        { keyId: session.keyId, name: '', createdAt: TEST_START + 16_000, expiresAt: TEST_START + 26_000, surfaces: ['web'] },
        { keyId: third.keyId, name: 'deploy bot', createdAt: TEST_START + 17_000, expiresAt: null, surfaces: ['api', 'web'] },
      ]);
      const text = JSON.stringify(listed);
      for (const k of [first, session, third]) {
        expect(text).not.toContain(keyDigest(k.key));
        expect(text).not.toContain(k.key.slice(-32));
      }
      gate.clock.set(TEST_START + 26_000);
      expect((await gate.tg.keys.list(id)).map((k) => k.keyId)).toEqual([first.keyId, third.keyId]);
    });

    it('list of a subject with no keys is empty', async () => {
      expect(await gate.tg.keys.list(await account())).toEqual([]);
    });
  });
});
