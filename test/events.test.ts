// Events (docs/events.md): thresholds fire once per crossing and re-arm, written by the step
// that moves the credit (none on a replay), time-driven ones come from the sweep, and
// consumers deliver each event at least once per group, with retries, dead letters and a
// size bound that counts what it drops. Each test has a deployment (prefix) of its own.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeliveredEvent, PlanTable, Tollgate } from '../src/index.ts';
import { accountId, backends, openTollgate, type TestGate } from './helpers/tollgate.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';

const PLANS = {
  ...EXAMPLE_PLANS,
  metered: {
    ...EXAMPLE_PLANS.starter,
    credits: { allowance: 1_000, cycle: { days: 30 } },
    events: { thresholds: [{ below: 100 }, { usedPercent: 80 }] },
  },
  watched: { ...EXAMPLE_PLANS.starter, credits: { allowance: 100, cycle: { days: 30 } }, events: { thresholds: [] } },
} satisfies PlanTable;

/** Consumes the group until `count` events came (or `ms` passed), then stops. */
async function collect(tg: Tollgate, group: string, count: number, options: { ms?: number; retryMs?: number; fail?: (e: DeliveredEvent) => boolean } = {}) {
  const seen: DeliveredEvent[] = [];
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), options.ms ?? 5_000);
  await tg.events.consume({
    group,
    signal: stop.signal,
    retryMs: options.retryMs ?? 30_000,
    maxAttempts: 3,
    handler: (event) => {
      seen.push(event);
      if (options.fail?.(event)) throw new Error('handler failed');
      if (seen.length >= count) stop.abort();
    },
  });
  clearTimeout(timer);
  return seen;
}

const brief = (e: DeliveredEvent) => ({ type: e.type, data: e.data });

describe.each(backends())('events on %s', (kind) => {
  let gate: TestGate;
  let tg: Tollgate;
  beforeEach(async () => {
    gate = await openTollgate(kind, 'events', { plans: PLANS, leaseMs: 60_000 });
    tg = gate.tg;
  });
  afterEach(() => gate.close());

  it('a threshold fires once per crossing, re-arms on a refund, and a replayed charge writes no event', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'metered' });
    await tg.credits.charge(id, { required: 150, operationId: 'a' }); // 850: nothing crossed
    await tg.credits.charge(id, { required: 700, operationId: 'b' }); // 150: used 85% >= 80%
    await tg.credits.charge(id, { required: 700, operationId: 'b' }); // a replay: nothing
    await tg.credits.charge(id, { required: 100, operationId: 'c' }); // 50: below 100
    await tg.credits.charge(id, { required: 10, operationId: 'd' }); // 40: still below, nothing
    const events = await collect(tg, 'g', 2);
    expect(events.map(brief)).toEqual([
      { type: 'credits.threshold', data: { threshold: { usedPercent: 80 }, available: 150, cycle: 1 } },
      { type: 'credits.threshold', data: { threshold: { below: 100 }, available: 50, cycle: 1 } },
    ]);
    expect(events.every((e) => e.subject === id && e.attempt === 1 && e.at === gate.clock.now)).toBe(true);
    expect(new Set(events.map((e) => e.id)).size).toBe(2);
  });

  it('credits.depleted at 0, and credits.restored re-arms each fired condition when a hold refunds', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'metered' });
    const opened = await tg.holds.openBudget(id, { amount: 1_000 });
    if (!opened.ok) throw new Error(opened.reason);
    await tg.holds.cancel(id, opened.hold.id);
    const events = await collect(tg, 'g', 6);
    expect(events.map((e) => e.type)).toEqual([
      'credits.threshold',
      'credits.threshold',
      'credits.depleted',
      'credits.restored',
      'credits.restored',
      'credits.restored',
    ]);
    expect(events[3]!.data).toEqual({ threshold: { below: 100 }, available: 1_000, cycle: 1 });
    expect(events[5]!.data).toEqual({ threshold: null, available: 1_000, cycle: 1 });
  });

  it('a plan or account takes at most 8 thresholds, each checked before anything is stored (docs/events.md#thresholds)', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'starter' });
    const eight = Array.from({ length: 8 }, (_, i) => ({ below: i * 10 }));
    await tg.accounts.setThresholds(id, eight);
    await expect(tg.accounts.setThresholds(id, [...eight, { below: 90 }])).rejects.toThrowError(/8/);
    await expect(tg.accounts.setThresholds(id, [{ usedPercent: 0 }])).rejects.toThrowError(/usedPercent/);
    await expect(tg.accounts.setThresholds(id, [{ usedPercent: 101 }])).rejects.toThrowError(/usedPercent/);
    await expect(tg.accounts.setThresholds(id, [{ below: -1 }])).rejects.toThrowError(/below/);
    await expect(
      openTollgate(kind, 'events-nine', { plans: { nine: { ...PLANS.starter, events: { thresholds: [...eight, { below: 90 }] } } } }),
    ).rejects.toThrowError(/8/);
  });

  it('an account without events writes none, and setThresholds gives it its own (what holds already is noted, not fired)', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'starter' });
    await tg.credits.charge(id, { required: 950 }); // 50 left, no events
    await tg.accounts.setThresholds(id, [{ below: 100 }, { below: 20 }]);
    await tg.credits.charge(id, { required: 40 }); // 10: crosses 20 only
    const events = await collect(tg, 'g', 1, { ms: 1_500 });
    expect(events.map(brief)).toEqual([{ type: 'credits.threshold', data: { threshold: { below: 20 }, available: 10, cycle: 1 } }]);
    if (gate.onRedis) expect(await gate.command(['EXISTS', `${gate.prefix}:{${id}}:ev`])).toBe(0);
  });

  it('a cycle nobody touches starts from the sweep, with cycle.started and the restored thresholds', async () => {
    const id = accountId();
    const { cycle } = await tg.accounts.create(id, { plan: 'watched' });
    await tg.credits.charge(id, { required: 100 });
    gate.clock.set(cycle.end);
    await tg.holds.sweep();
    const events = await collect(tg, 'g', 3);
    expect(events.map(brief)).toEqual([
      { type: 'credits.depleted', data: { available: 0, cycle: 1 } },
      { type: 'cycle.started', data: { cycle: 2, start: cycle.end, end: cycle.end + 30 * 86_400_000, allowance: 100 } },
      { type: 'credits.restored', data: { threshold: null, available: 100, cycle: 2 } },
    ]);
  });

  it('a hold ended by its lease writes hold.lapsed', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'watched' });
    const opened = await tg.holds.open(id, { items: 4, perItem: { required: 5 } });
    if (!opened.ok) throw new Error(opened.reason);
    await tg.holds.settle(id, opened.hold.id, { itemId: 'i1' });
    gate.clock.advance(60_000);
    await tg.holds.sweep();
    const events = await collect(tg, 'g', 1);
    expect(events.map(brief)).toEqual([{ type: 'hold.lapsed', data: { holdId: opened.hold.id, reserved: 20, spent: 5, refunded: 15 } }]);
  });

  it('a grant adds to available: grant.added restores a crossed threshold, grant.voided crosses it again; a replay writes nothing', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'metered' });
    await tg.credits.charge(id, { required: 950 }); // 50: below 100, used 95%
    const expiresAt = gate.clock.now + 10 * 86_400_000;
    const request = { amount: 200, kind: 'paid' as const, expiresAt, operationId: 'pack' };
    expect(await tg.credits.grant(id, request)).toMatchObject({ ok: true, grantId: 'g1', replayed: false });
    expect(await tg.credits.grant(id, request)).toMatchObject({ ok: true, replayed: true }); // nothing
    expect(await tg.credits.voidGrant(id, 'g1', { operationId: 'v1' })).toMatchObject({ voided: 200 });
    const events = await collect(tg, 'g', 6);
    expect(events.map(brief)).toEqual([
      { type: 'credits.threshold', data: { threshold: { below: 100 }, available: 50, cycle: 1 } },
      { type: 'credits.threshold', data: { threshold: { usedPercent: 80 }, available: 50, cycle: 1 } },
      { type: 'grant.added', data: { grantId: 'g1', kind: 'paid', amount: 200, effectiveAt: gate.clock.now, expiresAt } },
      // The cycle's use still holds (usedPercent stays fired); available is 250 now.
      { type: 'credits.restored', data: { threshold: { below: 100 }, available: 250, cycle: 1 } },
      { type: 'grant.voided', data: { grantId: 'g1', voided: 200 } },
      { type: 'credits.threshold', data: { threshold: { below: 100 }, available: 50, cycle: 1 } },
    ]);
  });

  it('a refund to a grant and an adjustment move available across thresholds as a charge does', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'metered' });
    await tg.credits.adjust(id, { amount: 100, reason: 'goodwill', operationId: 'adj' }); // 1,100 available
    await tg.credits.charge(id, { required: 1_100, operationId: 'all' }); // 0: the cycle, then the adjustment
    await tg.credits.refund(id, { charge: 'all', amount: 150, operationId: 'back' }); // 100 to g1, 50 to the cycle
    await tg.credits.adjust(id, { amount: -100, reason: 'correction', operationId: 'fix' }); // 50
    const events = await collect(tg, 'g', 7);
    expect(events.map((e) => e.type)).toEqual([
      'grant.added',
      'credits.threshold',
      'credits.threshold',
      'credits.depleted',
      'credits.restored',
      'credits.restored',
      'credits.threshold',
    ]);
    expect(events[0]!.data).toEqual({ grantId: 'g1', kind: 'adjustment', amount: 100, effectiveAt: gate.clock.now, expiresAt: null });
    expect(events[4]!.data).toEqual({ threshold: { below: 100 }, available: 150, cycle: 1 });
    expect(events[5]!.data).toEqual({ threshold: null, available: 150, cycle: 1 });
    expect(events[6]!.data).toEqual({ threshold: { below: 100 }, available: 50, cycle: 1 });
  });

  it('the sweep writes grant.expiring expiringNoticeMs before a grant expires, once, and grant.expired when it does', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'watched' });
    const expiresAt = gate.clock.now + 5 * 86_400_000;
    // Priority 60: spent after the cycle's allowance (50).
    await tg.credits.grant(id, { amount: 50, kind: 'promotional', priority: 60, expiresAt, operationId: 'promo' });
    await tg.credits.charge(id, { required: 120 }); // the cycle's 100, then 20 of the grant
    gate.clock.set(expiresAt - 3 * 86_400_000 - 1);
    await tg.holds.sweep(); // not yet due
    gate.clock.advance(1);
    await tg.holds.sweep();
    await tg.holds.sweep(); // once
    gate.clock.set(expiresAt);
    await tg.holds.sweep(); // nobody touches it: the sweep expires it
    const events = await collect(tg, 'g', 4);
    expect(events.map(brief)).toEqual([
      { type: 'grant.added', data: { grantId: 'g1', kind: 'promotional', amount: 50, effectiveAt: expiresAt - 5 * 86_400_000, expiresAt } },
      { type: 'grant.expiring', data: { grantId: 'g1', expiresAt, remaining: 30 } },
      { type: 'grant.expired', data: { grantId: 'g1', expired: 30, expiresAt } },
      { type: 'credits.depleted', data: { available: 0, cycle: 1 } },
    ]);
    expect(events[1]!.at).toBe(expiresAt - 3 * 86_400_000);
  });

  it('a handler that throws gets the event again after retryMs with its attempt, then it goes to the dead letters, and replay delivers it again', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'watched' });
    await tg.credits.charge(id, { required: 100 });
    const tries = await collect(tg, 'g', 4, { retryMs: 100, ms: 3_000, fail: () => true });
    expect(tries.map((e) => e.attempt)).toEqual([1, 2, 3]);
    const dead = await tg.events.deadLetters({ group: 'g' });
    expect(dead).toHaveLength(1);
    expect(dead[0]!.event.type).toBe('credits.depleted');
    expect(dead[0]!.attempts).toBe(3);
    expect((await tg.events.stats()).groups).toEqual([{ group: 'g', deadLetters: 1 }]);
    expect(await tg.events.replay('g', dead[0]!.event.id)).toBe(true);
    const again = await collect(tg, 'g', 1);
    expect(again.map((e) => [e.id, e.type, e.attempt])).toEqual([[dead[0]!.event.id, 'credits.depleted', 1]]);
    expect(await tg.events.deadLetters({ group: 'g' })).toEqual([]);
  });

  it('each group gets every event; within a group each goes to one consumer', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'watched' });
    await Promise.all([collect(tg, 'a', 1, { ms: 300 }), collect(tg, 'b', 1, { ms: 300 })]); // both groups join
    for (let i = 0; i < 5; i++) {
      await tg.credits.charge(id, { required: 100 });
      await tg.accounts.startCycle(id);
    }
    const a = await Promise.all([collect(tg, 'a', 15, { ms: 2_000 }), collect(tg, 'a', 15, { ms: 2_000 })]);
    const b = await collect(tg, 'b', 15, { ms: 2_000 });
    const idsA = a.flat().map((e) => e.id);
    expect(new Set(idsA).size).toBe(idsA.length);
    expect(idsA.sort()).toEqual(b.map((e) => e.id).sort());
    expect(idsA.length).toBe(15); // 5 x (depleted, cycle.started, restored)
  });

  it('past maxPerSubject events are dropped and counted, never silently', async () => {
    const small = await openTollgate(kind, 'events-small', { plans: PLANS, events: { maxPerSubject: 2 } });
    try {
      const id = accountId();
      await small.tg.accounts.create(id, { plan: 'watched' });
      for (let i = 0; i < 3; i++) {
        await small.tg.credits.charge(id, { required: 100 });
        await small.tg.accounts.startCycle(id);
      }
      // 9 events (3 x depleted, cycle.started, restored), 2 kept: no group has handled any.
      expect((await small.tg.events.stats()).dropped).toBe(7);
      expect((await collect(small.tg, 'g', 2)).map((e) => e.type)).toEqual(['credits.depleted', 'cycle.started']);
    } finally {
      await small.close();
    }
  });

  it('a consumer sees a new event within 1 s', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'watched' });
    const stop = new AbortController();
    let seenAt = 0;
    const running = tg.events.consume({ group: 'live', signal: stop.signal, handler: () => void (seenAt = Date.now()) });
    await new Promise((r) => setTimeout(r, 300));
    const movedAt = Date.now();
    await tg.credits.charge(id, { required: 100 });
    const deadline = Date.now() + 1_000;
    while (seenAt === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    stop.abort();
    await running;
    expect(seenAt).toBeGreaterThan(0);
    expect(seenAt - movedAt).toBeLessThan(1_000);
  });
});
