// Idempotency-Key handling for opening holds (docs/idempotency.md), through both clients.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { OpenOutcome, Tollgate } from '../src/index.ts';
import { canonicalJson } from '../src/canonicalJson.ts';
import { fingerprint } from '../src/idempotency.ts';
import { TEST_START, backends, newAccount, openTollgate, type TestGate } from './helpers/tollgate.ts';

describe('request fingerprints', () => {
  it('canonical JSON sorts keys at every depth, so key order does not matter', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}');
    expect(fingerprint({ items: ['a'], optional: true })).toBe(fingerprint({ optional: true, items: ['a'] }));
    expect(fingerprint({ items: ['a'] })).not.toBe(fingerprint({ items: ['b'] }));
    expect(fingerprint({ items: ['a'], note: undefined })).toBe(fingerprint({ items: ['a'] }));
  });
});

describe.each(backends())('Idempotency-Key through %s', (kind) => {
  let gate: TestGate;
  let tg: Tollgate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'idem', { idempotencyTtlMs: 3_600_000, idempotencyLockMs: 30_000 });
    tg = gate.tg;
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START));

  const account = (plan = 'pro') => newAccount(tg, plan);
  const body = { items: ['item-1'], optional: false };
  const open = (id: string, items: number, idempotency?: Parameters<Tollgate['holds']['open']>[1]['idempotency']): Promise<OpenOutcome> =>
    tg.holds.open(id, { items, perItem: { required: 1 }, idempotency });

  it('same key + same body -> the original outcome replayed, one hold, one reservation', async () => {
    const id = await account();
    const first = await open(id, 10, { key: 'k1', body });
    const again = await open(id, 10, { key: 'k1', body: { ...body } });
    expect(first).toMatchObject({ ok: true, replayed: false });
    expect(again).toEqual({ ...first, replayed: true });
    expect((await tg.usage(id)).credits).toMatchObject({ held: 10, balance: 4990 });
    expect((await tg.holds.list(id)).total).toBe(1);
  });

  it('the replay is the original outcome even after the hold moved on', async () => {
    const id = await account();
    const first = await open(id, 3, { key: 'k2', body });
    if (!first.ok) throw new Error(first.reason);
    await tg.holds.settle(id, first.hold.id, { itemId: 'a' });
    await tg.holds.cancel(id, first.hold.id);
    expect(await tg.idempotency.begin(id, 'k2', body)).toEqual({ state: 'replay', outcome: { kind: 'hold', hold: first.hold } });
    expect(await open(id, 3, { key: 'k2', body })).toEqual({ ok: true, hold: first.hold, replayed: true });
  });

  it('a budget hold is kept under its key the same way', async () => {
    const id = await account();
    const first = await tg.holds.openBudget(id, { amount: 7, idempotency: { key: 'kb', body } });
    expect(await tg.holds.openBudget(id, { amount: 7, idempotency: { key: 'kb', body } })).toEqual({ ...first, replayed: true });
    expect((await tg.usage(id)).credits.held).toBe(7);
  });

  it('same key + different body -> idempotency_key_reused, nothing stored or reserved', async () => {
    const id = await account();
    await open(id, 1, { key: 'k3', body });
    expect(await tg.idempotency.begin(id, 'k3', { ...body, optional: true })).toEqual({ state: 'reused' });
    expect(await open(id, 1, { key: 'k3', body: { other: 1 } })).toEqual({ ok: false, reason: 'idempotency_key_reused' });
    expect((await tg.usage(id)).credits.held).toBe(1);
    expect(await tg.idempotency.begin(id, 'k3', body)).toMatchObject({ state: 'replay' });
  });

  it('a pending key answers in use to a concurrent request until the first is resolved: begin in_use, open idempotency_key_in_use', async () => {
    const id = await account();
    const first = await tg.idempotency.begin(id, 'k4', body);
    expect(first.state).toBe('new');
    expect(await tg.idempotency.begin(id, 'k4', body)).toEqual({ state: 'in_use' });
    expect(await open(id, 2, { key: 'k4', body })).toEqual({ ok: false, reason: 'idempotency_key_in_use' });
    expect((await tg.usage(id)).credits.held).toBe(0);
    if (first.state !== 'new') throw new Error();
    const created = await open(id, 2, first.claim);
    expect(created.ok).toBe(true);
    expect(await tg.idempotency.begin(id, 'k4', body)).toMatchObject({ state: 'replay' });
    expect(await open(id, 2, { key: 'k4', body })).toEqual({ ...created, replayed: true });
  });

  // Redis's expiry of the record; memory drops it by its clock (the next test).
  it.skipIf(kind === 'memory')('a pending key is held idempotencyLockMs at most, so a crashed holder does not lock it for good', async () => {
    const id = await account();
    await tg.idempotency.begin(id, 'k-lock', body);
    const ttl = Number(await gate.command(['PTTL', `${gate.prefix}:{${id}}:ik:k-lock`]));
    expect(ttl).toBeGreaterThan(25_000);
    expect(ttl).toBeLessThanOrEqual(30_000);
  });

  it('a claim left by a crashed holder stops blocking the key once idempotencyLockMs passed: in use until then, new after', async () => {
    const id = await account();
    const crashed = await tg.idempotency.begin(id, 'k-crash', body);
    expect(crashed.state).toBe('new');
    gate.clock.advance(29_999);
    expect(await tg.idempotency.begin(id, 'k-crash', body)).toEqual({ state: 'in_use' });
    expect(await open(id, 2, { key: 'k-crash', body })).toEqual({ ok: false, reason: 'idempotency_key_in_use' });
    gate.clock.advance(1);
    const next = await tg.idempotency.begin(id, 'k-crash', body);
    expect(next.state).toBe('new');
    if (next.state !== 'new') throw new Error();
    expect(await open(id, 2, next.claim)).toMatchObject({ ok: true, replayed: false });
    // The lapsed claim's other body is no reason to refuse a new one: the key was free.
    await tg.idempotency.begin(id, 'k-crash-2', body);
    gate.clock.advance(30_000);
    expect((await tg.idempotency.begin(id, 'k-crash-2', { other: true })).state).toBe('new');
  });

  it("a holder that renews keeps its claim past idempotencyLockMs; once the key is another's, renew answers false", async () => {
    const id = await account();
    const holder = await tg.idempotency.begin(id, 'k-renew', body);
    if (holder.state !== 'new') throw new Error(holder.state);
    for (let i = 0; i < 5; i++) {
      gate.clock.advance(20_000);
      expect(await tg.idempotency.renew(id, holder.claim)).toBe(true);
      expect(await tg.idempotency.begin(id, 'k-renew', body)).toEqual({ state: 'in_use' });
    }
    if (gate.onRedis) expect(Number(await gate.command(['PTTL', `${gate.prefix}:{${id}}:ik:k-renew`]))).toBeGreaterThan(25_000);
    // The holder stops renewing (it hung): the key goes to the next request, and the holder learns it.
    gate.clock.advance(30_000);
    const other = await tg.idempotency.begin(id, 'k-renew', body);
    expect(other.state).toBe('new');
    expect(await tg.idempotency.renew(id, holder.claim)).toBe(false);
    expect(await open(id, 2, holder.claim)).toEqual({ ok: false, reason: 'idempotency_key_in_use' });
    if (other.state !== 'new') throw new Error();
    const created = await open(id, 2, other.claim);
    expect(created.ok).toBe(true);
    // Late, the first holder gets the hold the other opened, never one of its own.
    expect(await open(id, 2, holder.claim)).toEqual({ ...created, replayed: true });
    expect(await tg.idempotency.renew(id, other.claim)).toBe(false);
    expect((await tg.holds.list(id)).total).toBe(1);
  });

  it.each([
    ['the last claim still live', 0],
    ['every claim lapsed', 30_000],
  ])(
    '8 holders slower than idempotencyLockMs, each taking the key over from the last, open at once with 8 more requests (%s) -> one hold, one reservation',
    async (_, after) => {
      const id = await account();
      const claims = [];
      for (let i = 0; i < 8; i++) {
        const begun = await tg.idempotency.begin(id, 'k-slow', body);
        if (begun.state !== 'new') throw new Error(`holder ${i}: ${begun.state}`);
        claims.push(begun.claim);
        gate.clock.advance(30_000);
      }
      gate.clock.advance(after - 30_000);
      const outcomes = await Promise.all([
        ...claims.map((claim) => open(id, 4, claim)),
        ...Array.from({ length: 8 }, () => open(id, 4, { key: 'k-slow', body })),
      ]);
      const created = outcomes.filter((o) => o.ok && !o.replayed);
      expect(created).toHaveLength(1);
      for (const o of outcomes) {
        if (o.ok) expect(o.hold).toEqual(created[0]!.ok && created[0]!.hold);
        else expect(o.reason).toBe('idempotency_key_in_use');
      }
      expect((await tg.holds.list(id)).total).toBe(1);
      expect((await tg.usage(id)).credits).toMatchObject({ held: 4, balance: 4996 });
    },
  );

  it('32 concurrent opens with one key -> one hold, one reservation', async () => {
    const id = await account();
    const outcomes = await Promise.all(
      Array.from({ length: 32 }, async () => {
        const begun = await tg.idempotency.begin(id, 'k5', body);
        if (begun.state !== 'new') return begun.state;
        const r = await open(id, 4, begun.claim);
        return r.ok ? 'created' : r.reason;
      }),
    );
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(1);
    expect(outcomes.every((o) => ['created', 'replay', 'in_use'].includes(o))).toBe(true);
    expect((await tg.holds.list(id)).total).toBe(1);
    expect((await tg.usage(id)).credits).toMatchObject({ held: 4, balance: 4996 });
  });

  it('32 concurrent opens with one key and no begin step -> one hold, the rest replay it', async () => {
    const id = await account();
    const outcomes = await Promise.all(Array.from({ length: 32 }, () => open(id, 4, { key: 'k6', body })));
    expect(outcomes.filter((o) => o.ok && !o.replayed)).toHaveLength(1);
    expect(outcomes.filter((o) => o.ok && o.replayed)).toHaveLength(31);
    expect((await tg.usage(id)).credits.held).toBe(4);
  });

  it('the hold-cap refusal is stored under the key and replays even after holds end; a new key goes through', async () => {
    const id = await account('starter');
    const a = await open(id, 1);
    const b = await open(id, 1);
    const capped = await open(id, 1, { key: 'k7', body });
    expect(capped).toEqual({ ok: false, reason: 'hold_limit_reached', active: 2, cap: 2, replayed: false });
    if (!a.ok || !b.ok) throw new Error();
    await tg.holds.cancel(id, a.hold.id);
    await tg.holds.cancel(id, b.hold.id);
    expect(await open(id, 1, { key: 'k7', body })).toEqual({ ...capped, replayed: true });
    expect(await tg.idempotency.begin(id, 'k7', body)).toEqual({ state: 'replay', outcome: { kind: 'hold_limit_reached', active: 2, cap: 2 } });
    expect((await open(id, 1, { key: 'k8', body })).ok).toBe(true);
  });

  it('insufficient, surface and size refusals are not stored: the client may fix things and retry with the key', async () => {
    const id = await account('starter');
    const begun = await tg.idempotency.begin(id, 'k9', body);
    if (begun.state !== 'new') throw new Error();
    expect(await open(id, 1001, begun.claim)).toMatchObject({ ok: false, reason: 'insufficient' });
    const retry = await tg.idempotency.begin(id, 'k9', body);
    if (retry.state !== 'new') throw new Error(retry.state);
    expect(await open(id, 5001, retry.claim)).toMatchObject({ ok: false, reason: 'too_many_items' });
    const again = await tg.idempotency.begin(id, 'k9', body);
    if (again.state !== 'new') throw new Error(again.state);
    expect(await tg.holds.open(id, { items: 1, perItem: { required: 1 }, surface: 'mobile', idempotency: again.claim })).toMatchObject({
      ok: false,
      reason: 'surface_not_allowed',
    });
    // Without a begin step too.
    expect(await open(id, 1001, { key: 'k9', body })).toMatchObject({ ok: false, reason: 'insufficient' });
    const third = await tg.idempotency.begin(id, 'k9', body);
    if (third.state !== 'new') throw new Error(third.state);
    expect(await open(id, 10, third.claim)).toMatchObject({ ok: true, replayed: false });
  });

  it('release frees a pending key after a refusal made before the open (400/403)', async () => {
    const id = await account();
    const begun = await tg.idempotency.begin(id, 'k10', body);
    if (begun.state !== 'new') throw new Error();
    await tg.idempotency.release(id, begun.claim);
    expect((await tg.idempotency.begin(id, 'k10', body)).state).toBe('new');
  });

  it("release with another request's token leaves the pending key alone", async () => {
    const id = await account();
    const begun = await tg.idempotency.begin(id, 'k12', body);
    if (begun.state !== 'new') throw new Error();
    await tg.idempotency.release(id, { ...begun.claim, token: 'someone-else' });
    expect(await tg.idempotency.begin(id, 'k12', body)).toEqual({ state: 'in_use' });
  });

  it("keys are scoped per subject: one subject never sees another's outcome", async () => {
    const one = await account();
    const two = await account();
    await open(one, 2, { key: 'shared', body });
    expect(await open(two, 2, { key: 'shared', body: { other: true } })).toMatchObject({ ok: true, replayed: false });
    expect((await tg.idempotency.begin(one, 'shared', { other: true })).state).toBe('reused');
  });

  it('a stored outcome is kept for the configured time', async () => {
    const id = await account();
    await open(id, 1, { key: 'k11', body });
    if (gate.onRedis) {
      // Redis keeps it by its own clock.
      const ttl = Number(await gate.command(['PTTL', `${gate.prefix}:{${id}}:ik:k11`]));
      expect(ttl).toBeGreaterThan(3_500_000);
      expect(ttl).toBeLessThanOrEqual(3_600_000);
    } else {
      // Memory keeps it by the tollgate's clock.
      gate.clock.advance(3_599_999);
      expect(await tg.idempotency.begin(id, 'k11', body)).toMatchObject({ state: 'replay' });
      gate.clock.advance(1);
      expect(await tg.idempotency.begin(id, 'k11', body)).toMatchObject({ state: 'new' });
    }
  });
});
