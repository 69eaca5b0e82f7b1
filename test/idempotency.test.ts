// Idempotency-Key handling for job creation (SPEC §7), through both clients.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { canonicalJson, fingerprint, type Tollgate } from '../src/index.ts';
import { CLIENT_KINDS, TEST_START, accountId, openTollgate, type TestGate } from './helpers/tollgate.ts';

describe('request fingerprints', () => {
  it('canonical JSON sorts keys at every depth, so key order does not matter', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}');
    expect(fingerprint({ video_ids: ['a'], include_comments: true })).toBe(fingerprint({ include_comments: true, video_ids: ['a'] }));
    expect(fingerprint({ video_ids: ['a'] })).not.toBe(fingerprint({ video_ids: ['b'] }));
  });
});

describe.each(CLIENT_KINDS)('Idempotency-Key through %s', (kind) => {
  let gate: TestGate;
  let tg: Tollgate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'idem', { idempotencyTtlMs: 3_600_000 });
    tg = gate.tg;
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START));

  async function account(plan = 'pro') {
    const id = accountId();
    await tg.accounts.create(id, { plan });
    return id;
  }
  const body = { video_ids: ['dQw4w9WgXcQ'], include_comments: false };

  it('same key + same body -> the original outcome replayed, one job, one reservation', async () => {
    const id = await account();
    const first = await tg.jobs.reserve(id, { videos: 10, idempotency: { key: 'k1', body } });
    const again = await tg.jobs.reserve(id, { videos: 10, idempotency: { key: 'k1', body: { ...body } } });
    expect(first).toMatchObject({ ok: true, replayed: false });
    expect(again).toEqual({ ...first, replayed: true });
    expect((await tg.usage(id)).credits).toMatchObject({ held: 10, balance: 4990 });
  });

  it('the replay is the original outcome even after the job moved on', async () => {
    const id = await account();
    const first = await tg.jobs.reserve(id, { videos: 3, idempotency: { key: 'k2', body } });
    if (!first.ok) throw new Error(first.reason);
    await tg.jobs.cancel(id, first.job.id);
    const begin = await tg.idempotency.begin(id, 'k2', body);
    expect(begin).toEqual({ state: 'replay', outcome: { kind: 'job', job: first.job } });
  });

  it('same key + different body -> idempotency_key_reused, nothing stored or reserved', async () => {
    const id = await account();
    await tg.jobs.reserve(id, { videos: 1, idempotency: { key: 'k3', body } });
    expect(await tg.idempotency.begin(id, 'k3', { ...body, include_comments: true })).toEqual({ state: 'reused' });
    expect(await tg.jobs.reserve(id, { videos: 1, idempotency: { key: 'k3', body: { other: 1 } } })).toEqual({ ok: false, reason: 'idempotency_key_reused' });
    expect((await tg.usage(id)).credits.held).toBe(1);
  });

  it('a pending key answers in_use to a concurrent request until the first is resolved', async () => {
    const id = await account();
    const first = await tg.idempotency.begin(id, 'k4', body);
    expect(first.state).toBe('new');
    expect(await tg.idempotency.begin(id, 'k4', body)).toEqual({ state: 'in_use' });
    if (first.state !== 'new') throw new Error();
    const created = await tg.jobs.reserve(id, { videos: 2, idempotency: first.claim });
    expect(created.ok).toBe(true);
    expect(await tg.idempotency.begin(id, 'k4', body)).toMatchObject({ state: 'replay' });
  });

  it('32 concurrent creates with one key -> one job, one reservation', async () => {
    const id = await account();
    const outcomes = await Promise.all(
      Array.from({ length: 32 }, async () => {
        const begun = await tg.idempotency.begin(id, 'k5', body);
        if (begun.state !== 'new') return begun.state;
        const r = await tg.jobs.reserve(id, { videos: 4, idempotency: begun.claim });
        return r.ok ? 'created' : r.reason;
      }),
    );
    expect(outcomes.filter((o) => o === 'created')).toHaveLength(1);
    expect(outcomes.every((o) => ['created', 'replay', 'in_use'].includes(o))).toBe(true);
    expect((await tg.jobs.list(id)).total).toBe(1);
    expect((await tg.usage(id)).credits).toMatchObject({ held: 4, balance: 4996 });
  });

  it('32 concurrent creates with one key and no begin step -> one job, the rest replay it', async () => {
    const id = await account();
    const outcomes = await Promise.all(Array.from({ length: 32 }, () => tg.jobs.reserve(id, { videos: 4, idempotency: { key: 'k6', body } })));
    expect(outcomes.filter((o) => o.ok && !o.replayed)).toHaveLength(1);
    expect(outcomes.filter((o) => o.ok && o.replayed)).toHaveLength(31);
    expect((await tg.usage(id)).credits.held).toBe(4);
  });

  it('the job-cap 429 is stored under the key and replays even after jobs finish; a new key goes through', async () => {
    const id = await account('starter');
    const a = await tg.jobs.reserve(id, { videos: 1 });
    const b = await tg.jobs.reserve(id, { videos: 1 });
    const capped = await tg.jobs.reserve(id, { videos: 1, idempotency: { key: 'k7', body } });
    expect(capped).toEqual({ ok: false, reason: 'job_limit_reached', active: 2, cap: 2, replayed: false });
    if (!a.ok || !b.ok) throw new Error();
    await tg.jobs.cancel(id, a.job.id);
    await tg.jobs.cancel(id, b.job.id);
    expect(await tg.jobs.reserve(id, { videos: 1, idempotency: { key: 'k7', body } })).toEqual({ ...capped, replayed: true });
    expect((await tg.jobs.reserve(id, { videos: 1, idempotency: { key: 'k8', body } })).ok).toBe(true);
  });

  it('insufficient, plan and size refusals are not stored: the client may fix things and retry with the key', async () => {
    const id = await account('starter');
    const begun = await tg.idempotency.begin(id, 'k9', body);
    if (begun.state !== 'new') throw new Error();
    expect(await tg.jobs.reserve(id, { videos: 1001, idempotency: begun.claim })).toMatchObject({ ok: false, reason: 'insufficient' });
    const retry = await tg.idempotency.begin(id, 'k9', body);
    expect(retry.state).toBe('new');
    if (retry.state !== 'new') throw new Error();
    expect(await tg.jobs.reserve(id, { videos: 5001, idempotency: retry.claim })).toMatchObject({ ok: false, reason: 'too_many_videos' });
    const third = await tg.idempotency.begin(id, 'k9', body);
    if (third.state !== 'new') throw new Error();
    expect(await tg.jobs.reserve(id, { videos: 10, idempotency: third.claim })).toMatchObject({ ok: true, replayed: false });
  });

  it('release frees a pending key after a refusal made before reserve (400/403)', async () => {
    const id = await account();
    const begun = await tg.idempotency.begin(id, 'k10', body);
    if (begun.state !== 'new') throw new Error();
    await tg.idempotency.release(id, begun.claim);
    expect((await tg.idempotency.begin(id, 'k10', body)).state).toBe('new');
  });

  it('keys are scoped per account: one account never sees another\'s outcome', async () => {
    const one = await account();
    const two = await account();
    await tg.jobs.reserve(one, { videos: 2, idempotency: { key: 'shared', body } });
    expect(await tg.jobs.reserve(two, { videos: 2, idempotency: { key: 'shared', body: { other: true } } })).toMatchObject({ ok: true, replayed: false });
    expect((await tg.idempotency.begin(one, 'shared', { other: true })).state).toBe('reused');
  });

  it('a stored outcome is kept for the configured time', async () => {
    const id = await account();
    await tg.jobs.reserve(id, { videos: 1, idempotency: { key: 'k11', body } });
    const ttl = Number(await gate.command(['PTTL', `${gate.prefix}:{${id}}:ik:k11`]));
    expect(ttl).toBeGreaterThan(3_500_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000);
  });
});
