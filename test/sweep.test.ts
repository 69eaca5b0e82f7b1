// The sweep (docs/holds.md): holds whose worker stopped reporting are ended by their lease, with
// their refunds, so no credit or cap place stays locked forever; safe from many servers at
// once. The deployment-wide sweep sees every subject under its prefix, so each test has a
// prefix (a deployment) of its own.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTollgate, type Hold, type RedisScriptClient, type Tollgate } from '../src/index.ts';
import { sweepMark } from '../src/scripts/bundle.generated.ts';
import { checkInvariants } from '../src/model/index.ts';
import {
  type CLIENT_KINDS,
  accountId,
  backends,
  connectTestClient,
  openTollgate,
  type ClientKind,
  type TestClient,
  type TestGate,
} from './helpers/tollgate.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';

const LEASE = 60_000;

describe.each(backends())('the sweep on %s', (kind) => {
  let gate: TestGate;
  let tg: Tollgate;
  let extra: TestClient[] = [];
  beforeEach(async () => {
    gate = await openTollgate(kind, 'sweep', { leaseMs: LEASE });
    tg = gate.tg;
  });
  afterEach(async () => {
    await Promise.all(extra.map((client) => client.close()));
    extra = [];
    await gate.close();
  });

  /** Another app server on the same deployment, through either client. */
  async function server(client: (typeof CLIENT_KINDS)[number], wrap: (inner: RedisScriptClient) => RedisScriptClient = (inner) => inner): Promise<Tollgate> {
    const connected = await connectTestClient(client);
    extra.push(connected);
    return createTollgate({ plans: EXAMPLE_PLANS, redis: wrap(connected.adapter), prefix: gate.prefix, clock: gate.clock.fn, leaseMs: LEASE });
  }
  async function subjectWithHold(plan = 'pro', items = 5): Promise<{ id: string; hold: Hold }> {
    const id = accountId();
    await tg.accounts.create(id, { plan });
    const outcome = await tg.holds.open(id, { items, perItem: { required: 1 } });
    if (!outcome.ok) throw new Error(outcome.reason);
    return { id, hold: outcome.hold };
  }
  const indexScore = async (id: string) => {
    const score = await gate.command(['ZSCORE', `${gate.prefix}:sweep`, id]);
    return score === null ? null : Number(score);
  };
  async function expectSound(id: string) {
    expect(checkInvariants(await tg.accounts.inspect(id)), id).toEqual([]);
    expect((await tg.credits.reconcile(id)).matches, `${id} reconciles`).toBe(true);
  }

  it('ends every hold of a subject whose lease ran out, with its refunds, freeing the cap', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'starter' });
    const a = await tg.holds.open(id, { items: 10, perItem: { required: 1 } });
    await tg.holds.openBudget(id, { amount: 20 });
    expect(await tg.holds.open(id, { items: 1, perItem: { required: 1 } })).toMatchObject({ ok: false, reason: 'hold_limit_reached', active: 2, cap: 2 });
    if (!a.ok) throw new Error(a.reason);
    await tg.holds.settle(id, a.hold.id, { itemId: 'one' });
    gate.clock.advance(LEASE);
    expect(await tg.holds.sweepSubject(id)).toEqual({ ended: 2, nextLeaseAt: null });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 999, spent: 1, held: 0 });
    expect(await tg.holds.get(id, a.hold.id)).toMatchObject({ status: 'completed', endReason: 'lease_expired', endedAt: gate.clock.now, refunded: 9, held: 0 });
    expect((await tg.holds.open(id, { items: 1, perItem: { required: 1 } })).ok).toBe(true);
    await expectSound(id);
  });

  it("finds a hold by its own lease, whichever of a subject's holds opened first: the index keeps the earliest lease", async () => {
    for (const leases of [
      [62 * 86_400_000, 1_000],
      [1_000, 62 * 86_400_000],
    ]) {
      const id = accountId();
      await tg.accounts.create(id, { plan: 'pro' });
      const holds = [];
      for (const leaseMs of leases) {
        const opened = await tg.holds.open(id, { items: 2, perItem: { required: 1 }, leaseMs });
        if (!opened.ok) throw new Error(opened.reason);
        holds.push(opened.hold);
      }
      gate.clock.advance(1_000);
      expect(await tg.holds.sweep(), `leases ${leases.join(', ')}`).toEqual({ subjects: 1, ended: 1 });
      const short = holds[leases.indexOf(1_000)]!;
      expect(await tg.holds.get(id, short.id)).toMatchObject({ endReason: 'lease_expired', refunded: 2 });
      if (gate.onRedis) expect(await indexScore(id)).toBe(holds[leases.indexOf(62 * 86_400_000)]!.leaseExpiresAt);
      await expectSound(id);
    }
  });

  it('reclaims lapsed holds of every subject of the deployment, and running it twice changes nothing', async () => {
    const subjects = [await subjectWithHold(), await subjectWithHold(), await subjectWithHold()];
    gate.clock.advance(LEASE + 1);
    expect(await tg.holds.sweep()).toEqual({ subjects: 3, ended: 3 });
    expect(await tg.holds.sweep()).toEqual({ subjects: 0, ended: 0 });
    for (const { id, hold } of subjects) {
      expect((await tg.usage(id)).credits).toMatchObject({ balance: 5000, held: 0 });
      expect(await tg.holds.get(id, hold.id)).toMatchObject({ endReason: 'lease_expired', refunded: 5 });
      if (gate.onRedis) expect(await indexScore(id)).toBeNull();
    }
  });

  it('goes through more subjects than one batch, batch by batch', async () => {
    for (let i = 0; i < 5; i++) await subjectWithHold();
    gate.clock.advance(LEASE);
    expect(await tg.holds.sweep({ batch: 2, maxRounds: 2 })).toEqual({ subjects: 4, ended: 4 });
    expect(await tg.holds.sweep({ batch: 2 })).toEqual({ subjects: 1, ended: 1 });
  });

  // Several servers on one deployment, and accounts deleted behind tollgate's back: Redis only.
  it.skipIf(kind === 'memory')('concurrent sweeps from many servers, through both clients, end each lapsed hold once', async () => {
    const subjects = [];
    for (let i = 0; i < 8; i++) subjects.push(await subjectWithHold('pro', 7));
    gate.clock.advance(LEASE);
    const servers = [tg, await server('node-redis'), await server('ioredis')];
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => servers[i % servers.length]!.holds.sweep({ batch: 3 })));
    expect(results.reduce((n, r) => n + r.ended, 0)).toBe(8);
    for (const { id, hold } of subjects) {
      expect((await tg.usage(id)).credits).toMatchObject({ balance: 5000, held: 0 });
      const refunds = (await gate.command(['XRANGE', `${gate.prefix}:{${id}}:jn`, '-', '+'])) as [string, string[]][];
      expect(
        refunds.filter(([, f]) => f.includes('refund') && f.includes(hold.id)),
        `${id}: one refund`,
      ).toHaveLength(1);
      await expectSound(id);
    }
  });

  it('keeps a subject whose holds are still leased, scored at the next lease, and comes back when it runs out', async () => {
    const { id, hold } = await subjectWithHold();
    if (gate.onRedis) expect(await indexScore(id)).toBe(gate.clock.now + LEASE);
    gate.clock.advance(LEASE - 10);
    const settled = await tg.holds.settle(id, hold.id, { itemId: 'one' });
    gate.clock.advance(20);
    expect(await tg.holds.sweep()).toEqual({ subjects: 1, ended: 0 });
    if (gate.onRedis) expect(await indexScore(id)).toBe(settled.hold.leaseExpiresAt);
    gate.clock.advance(LEASE);
    expect(await tg.holds.sweep()).toEqual({ subjects: 1, ended: 1 });
    expect(await tg.holds.get(id, hold.id)).toMatchObject({ status: 'completed', endReason: 'lease_expired', spent: 1, refunded: 4 });
    if (gate.onRedis) expect(await indexScore(id)).toBeNull();
  });

  it.skipIf(kind === 'memory')('moves index entries by compare-and-set: a hold opened while its subject is being swept is not dropped', async () => {
    const { id } = await subjectWithHold();
    gate.clock.advance(LEASE);
    let late: Hold | undefined;
    // Between the subject's sweep and the sweeper's mark, another server opens a hold for it.
    const sweeper = await server(kind as ClientKind, (inner) => ({
      ...inner,
      async send(words) {
        if ((words[1] === sweepMark.fn || words[1] === sweepMark.sha1) && words[5] !== '' && !late) {
          const outcome = await tg.holds.open(id, { items: 3, perItem: { required: 1 } });
          if (!outcome.ok) throw new Error(outcome.reason);
          late = outcome.hold;
        }
        return inner.send(words);
      },
    }));
    expect(await sweeper.holds.sweep()).toEqual({ subjects: 1, ended: 1 });
    expect(late).toBeDefined();
    // The opening's mark stands: the sweeper's, made from a stale read, was not applied.
    if (gate.onRedis) expect(await indexScore(id)).toBe(late!.leaseExpiresAt);
    gate.clock.advance(LEASE);
    expect(await tg.holds.sweep()).toEqual({ subjects: 1, ended: 1 });
    expect(await tg.holds.get(id, late!.id)).toMatchObject({ endReason: 'lease_expired', refunded: 3 });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 5000, held: 0 });
  });

  it.skipIf(kind === 'memory')('drops a subject that no longer has an account from the index', async () => {
    const { id } = await subjectWithHold();
    const keys = (await gate.command(['KEYS', `${gate.prefix}:{${id}}:*`])) as string[];
    for (const key of keys) await gate.command(['DEL', key]);
    gate.clock.advance(LEASE);
    expect(await tg.holds.sweep()).toEqual({ subjects: 1, ended: 0 });
    if (gate.onRedis) expect(await indexScore(id)).toBeNull();
  });
});
