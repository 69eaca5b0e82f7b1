// Credit grants (docs/grants.md): grants, the spend order, sources on every debit, refunds to
// the source that paid, voids, adjustments, refunds of charges, the bounds and usage.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { GrantNotFoundError, InvalidInputError } from '../src/errors.ts';
import type { Grant } from '../src/index.ts';
import { TEST_START, backends, newAccount, openTollgate, type TestGate } from './helpers/tollgate.ts';

const DAY = 86_400_000;

describe.each(backends())('credit grants on %s', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    // Charges stay refundable 40 days: refunds after a cycle has ended can be tried.
    gate = await openTollgate(kind, 'grants', { leaseMs: 60_000, operationTtlMs: 40 * DAY });
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START));

  const tg = () => gate.tg;
  const account = (plan = 'free') => newAccount(gate.tg, plan);
  let op = 0;
  const opId = () => `op_${++op}`;
  const grant = async (id: string, request: Partial<Parameters<ReturnType<typeof tg>['credits']['grant']>[1]> & { amount: number }) => {
    const outcome = await tg().credits.grant(id, { operationId: opId(), ...request });
    if (!outcome.ok) throw new Error(`grant refused: ${outcome.reason}`);
    return outcome.grantId;
  };
  const listed = async (id: string, ended = false) => (await tg().credits.grants(id, { ended })).map((g) => `${g.grantId}:${g.status}`);
  const byId = async (id: string, grantId: string, ended = true): Promise<Grant> => {
    const found = (await tg().credits.grants(id, { ended })).find((g) => g.grantId === grantId);
    if (!found) throw new Error(`no ${grantId}`);
    return found;
  };
  /** remaining + spent + held + expired + voided + refundedAfterEnd == amount, for every source. */
  const expectBalanced = async (id: string) => {
    for (const g of await tg().credits.grants(id, { ended: true })) {
      expect(g.remaining + g.spent + g.held + g.expired + g.voided + g.refundedAfterEnd, g.grantId).toBe(g.amount);
      expect(g.remaining, g.grantId).toBeGreaterThanOrEqual(0);
      if (g.endedAt !== null) expect(g.remaining, g.grantId).toBe(0);
    }
  };

  describe('grant', () => {
    it('adds a grant, live from now, that a charge draws from after the cycle (the default spend order)', async () => {
      const id = await account();
      const outcome = await tg().credits.grant(id, { amount: 100, operationId: 'topup-1', reason: 'top-up pack' });
      expect(outcome).toEqual({ ok: true, grantId: 'g1', replayed: false });
      expect(await tg().credits.grants(id)).toEqual([
        expect.objectContaining({ grantId: 'cycle:1', kind: 'plan', priority: 50, amount: 30, remaining: 30, status: 'active' }),
        {
          grantId: 'g1',
          kind: 'paid',
          priority: 50,
          amount: 100,
          remaining: 100,
          spent: 0,
          held: 0,
          expired: 0,
          voided: 0,
          refundedAfterEnd: 0,
          effectiveAt: TEST_START,
          expiresAt: null,
          createdAt: TEST_START,
          endedAt: null,
          status: 'active',
          reason: 'top-up pack',
        },
      ]);
      expect(await tg().credits.charge(id, { required: 40 })).toEqual({
        ok: true,
        charged: 40,
        balance: 0,
        available: 90,
        sources: [
          { grantId: 'cycle:1', amount: 30 },
          { grantId: 'g1', amount: 10 },
        ],
        replayed: false,
      });
      expect((await tg().usage(id)).credits).toMatchObject({ balance: 0, spent: 30, available: 90, nextExpiry: null });
      await expectBalanced(id);
    });

    it('the same operation id with the same terms replays the grant; with other terms it is an InvalidInputError', async () => {
      const id = await account();
      const request = { amount: 50, kind: 'promotional' as const, expiresAt: TEST_START + 30 * DAY, operationId: 'promo-1' };
      expect(await tg().credits.grant(id, request)).toEqual({ ok: true, grantId: 'g1', replayed: false });
      gate.clock.advance(1000);
      expect(await tg().credits.grant(id, request)).toEqual({ ok: true, grantId: 'g1', replayed: true });
      await expect(tg().credits.grant(id, { ...request, amount: 51 })).rejects.toThrowError(InvalidInputError);
      await expect(tg().credits.grant(id, { ...request, kind: 'paid' })).rejects.toThrowError(InvalidInputError);
      // A charge with the grant's operation id is another operation.
      await expect(tg().credits.charge(id, { required: 1, operationId: 'promo-1' })).rejects.toThrowError(InvalidInputError);
      expect(await listed(id)).toEqual(['cycle:1:active', 'g1:active']);
    });

    it('needs an account, and checks its terms', async () => {
      await expect(tg().credits.grant('nobody_here', { amount: 1, operationId: 'x' })).rejects.toThrowError(/nobody_here/);
      const id = await account();
      await expect(tg().credits.grant(id, { amount: 0, operationId: 'x' })).rejects.toThrowError(InvalidInputError);
      // docs/grants.md: priority 0..1000, a reason of at most 200 characters.
      await expect(tg().credits.grant(id, { amount: 5, priority: 1001, operationId: 'x' })).rejects.toThrowError(/priority/);
      await expect(tg().credits.grant(id, { amount: 5, priority: -1, operationId: 'x' })).rejects.toThrowError(/priority/);
      await expect(tg().credits.grant(id, { amount: 5, reason: 'r'.repeat(201), operationId: 'x' })).rejects.toThrowError(/Reason/);
      expect(await tg().credits.grant(id, { amount: 5, priority: 1000, reason: 'r'.repeat(200), operationId: 'bounds' })).toMatchObject({ ok: true });
      await expect(tg().credits.grant(id, { amount: 5, expiresAt: TEST_START, operationId: 'x' })).rejects.toThrowError(InvalidInputError);
      await expect(tg().credits.grant(id, { amount: 5, effectiveAt: TEST_START + DAY, expiresAt: TEST_START + DAY, operationId: 'x' })).rejects.toThrowError(
        InvalidInputError,
      );
    });

    it('a pending grant counts from effectiveAt exactly, and expires at expiresAt exactly', async () => {
      const id = await account();
      const from = TEST_START + DAY;
      const to = TEST_START + 2 * DAY;
      await grant(id, { amount: 20, effectiveAt: from, expiresAt: to });
      expect(await listed(id)).toEqual(['cycle:1:active', 'g1:pending']);
      gate.clock.set(from - 1);
      expect((await tg().usage(id)).credits.available).toBe(30);
      expect(await tg().credits.charge(id, { required: 31 })).toMatchObject({ ok: false, reason: 'insufficient', balance: 30, available: 30, needed: 31 });
      gate.clock.set(from);
      expect((await tg().usage(id)).credits).toMatchObject({ available: 50, nextExpiry: { grantId: 'g1', expiresAt: to, amount: 20 } });
      // The grant expires before the cycle, so it is spent first.
      expect(await tg().credits.charge(id, { required: 5 })).toMatchObject({ ok: true, sources: [{ grantId: 'g1', amount: 5 }], available: 45 });
      gate.clock.set(to - 1);
      expect((await tg().usage(id)).credits.available).toBe(45);
      gate.clock.set(to);
      expect((await tg().usage(id)).credits).toMatchObject({ available: 30, nextExpiry: null });
      expect(await byId(id, 'g1')).toMatchObject({ status: 'expired', remaining: 0, spent: 5, expired: 15, endedAt: to });
      expect(await listed(id)).toEqual(['cycle:1:active']);
      expect(await listed(id, true)).toEqual(['cycle:1:active', 'g1:expired']);
      await expectBalanced(id);
    });

    it('the pre-check of admit compares available, in one round trip, and sees a grant at effectiveAt', async () => {
      const id = await account('starter');
      await tg().credits.charge(id, { required: 1000 });
      const precheck = async () => {
        const admission = await tg().limits.admit(id, { surface: 'api', credits: 5 });
        return admission.ok ? admission.credits : undefined;
      };
      expect(await precheck()).toEqual({ sufficient: false, balance: 0, available: 0, needed: 5 });
      await grant(id, { amount: 10, effectiveAt: TEST_START + 1000 });
      expect(await precheck()).toMatchObject({ sufficient: false, available: 0 });
      gate.clock.advance(1000);
      expect(await precheck()).toEqual({ sufficient: true, balance: 0, available: 10, needed: 5 });
      await grant(id, { amount: 7 });
      expect(await precheck()).toMatchObject({ sufficient: true, available: 17 });
    });
  });

  describe('the spend order', () => {
    it('priority first, then expiry soonest (none last), then promotional, plan, adjustment, paid, then effectiveAt, then creation', async () => {
      const id = await account();
      const end = TEST_START + 10 * DAY;
      const paid = await grant(id, { amount: 1, kind: 'paid' });
      const adjustment = await grant(id, { amount: 1, kind: 'adjustment' });
      const promo = await grant(id, { amount: 1, kind: 'promotional' });
      const urgent = await grant(id, { amount: 1, priority: 10 });
      const soon = await grant(id, { amount: 1, expiresAt: end });
      const sooner = await grant(id, { amount: 1, expiresAt: end - 1 });
      const olderStart = await grant(id, { amount: 1, effectiveAt: TEST_START - DAY });
      gate.clock.advance(1);
      const later = await grant(id, { amount: 1, kind: 'paid', effectiveAt: TEST_START });
      const last = await grant(id, { amount: 1, priority: 900 });
      // Listed: the current cycle first, then the grants in spend order.
      const order = (await tg().credits.grants(id)).map((g) => g.grantId);
      expect(order).toEqual(['cycle:1', urgent, sooner, soon, promo, adjustment, olderStart, paid, later, last]);
      // A charge draws in spend order, front first: the cycle expires at its end, before the
      // grants that never expire.
      const outcome = await tg().credits.charge(id, { required: 33 });
      expect(outcome).toMatchObject({
        ok: true,
        sources: [
          { grantId: urgent, amount: 1 },
          { grantId: sooner, amount: 1 },
          { grantId: soon, amount: 1 },
          { grantId: 'cycle:1', amount: 30 },
        ],
      });
      await expectBalanced(id);
    });

    it('on a tie of everything but creation, the older grant goes first; a cycle rollover moves the cycle in the order', async () => {
      const id = await account();
      const a = await grant(id, { amount: 5, expiresAt: TEST_START + 45 * DAY });
      const b = await grant(id, { amount: 5, expiresAt: TEST_START + 45 * DAY });
      expect((await tg().credits.grants(id)).map((g) => g.grantId)).toEqual(['cycle:1', a, b]);
      expect(await tg().credits.charge(id, { required: 1 })).toMatchObject({ sources: [{ grantId: 'cycle:1', amount: 1 }] });
      // The next cycle ends after the grants: they are spent before it.
      gate.clock.advance(30 * DAY);
      expect((await tg().credits.grants(id)).map((g) => g.grantId)).toEqual(['cycle:2', a, b]);
      expect(await tg().credits.charge(id, { required: 7 })).toMatchObject({
        sources: [
          { grantId: a, amount: 5 },
          { grantId: b, amount: 2 },
        ],
        balance: 30,
        available: 33,
      });
      await expectBalanced(id);
    });
  });

  describe('holds', () => {
    it("a hold draws in spend order; spends take from the front, refunds go back to the back's sources", async () => {
      const id = await account('starter');
      const early = await grant(id, { amount: 10, priority: 1 });
      const opened = await tg().holds.openBudget(id, { amount: 15 });
      if (!opened.ok) throw new Error('not opened');
      expect(opened.hold.sources).toEqual([
        { grantId: early, amount: 10 },
        { grantId: 'cycle:1', amount: 5 },
      ]);
      expect(await byId(id, early)).toMatchObject({ remaining: 0, held: 10, status: 'used' });
      await tg().holds.spend(id, opened.hold.id, { itemId: 'a', amount: 12 });
      expect(await byId(id, early)).toMatchObject({ remaining: 0, held: 0, spent: 10 });
      expect((await tg().usage(id)).credits).toMatchObject({ balance: 995, held: 3, spent: 2 });
      const ended = await tg().holds.finish(id, opened.hold.id);
      expect(ended.hold).toMatchObject({ spent: 12, refunded: 3, refundedToEndedCycle: 0 });
      expect((await tg().usage(id)).credits).toMatchObject({ balance: 998, held: 0, spent: 2, available: 998 });
      await expectBalanced(id);
    });

    it('credits held from a grant that expires stay held; refunded later they are its refundedAfterEnd and raise no balance', async () => {
      const id = await account('starter');
      const promo = await grant(id, { amount: 10, kind: 'promotional', expiresAt: TEST_START + DAY });
      const opened = await tg().holds.open(id, { items: 3, perItem: { required: 4 }, leaseMs: 3 * DAY });
      if (!opened.ok) throw new Error('not opened');
      expect(opened.hold.sources).toEqual([
        { grantId: promo, amount: 10 },
        { grantId: 'cycle:1', amount: 2 },
      ]);
      await tg().holds.settle(id, opened.hold.id, { itemId: '1' });
      gate.clock.advance(DAY);
      expect(await byId(id, promo)).toMatchObject({ status: 'expired', remaining: 0, spent: 4, held: 6, expired: 0 });
      const cancelled = await tg().holds.cancel(id, opened.hold.id);
      // Back first: the cycle's 2 to its balance, then the grant's 6 to its refundedAfterEnd.
      expect(cancelled.hold).toMatchObject({ refunded: 8, refundedToEndedCycle: 6 });
      expect(await byId(id, promo)).toMatchObject({ held: 0, refundedAfterEnd: 6, spent: 4 });
      expect((await tg().usage(id)).credits).toMatchObject({ balance: 1000, available: 1000 });
      await expectBalanced(id);
    });

    it('a voided grant keeps what it holds; refunded, it is voided', async () => {
      const id = await account('starter');
      const paid = await grant(id, { amount: 10, priority: 0 });
      const opened = await tg().holds.openBudget(id, { amount: 8 });
      if (!opened.ok) throw new Error('not opened');
      expect(await tg().credits.voidGrant(id, paid, { operationId: 'void-1', reason: 'chargeback' })).toEqual({ ok: true, voided: 2, replayed: false });
      expect(await byId(id, paid)).toMatchObject({ status: 'voided', remaining: 0, held: 8, voided: 2 });
      await tg().holds.spend(id, opened.hold.id, { itemId: 'x', amount: 3 });
      await tg().holds.finish(id, opened.hold.id);
      expect(await byId(id, paid)).toMatchObject({ spent: 3, held: 0, voided: 7, refundedAfterEnd: 0 });
      await expectBalanced(id);
    });
  });

  describe('voidGrant', () => {
    it('voids what is left; the same id replays, an ended grant voids nothing, unknown ids and cycles are refused', async () => {
      const id = await account();
      const g = await grant(id, { amount: 10 });
      expect(await tg().credits.voidGrant(id, g, { operationId: 'v1' })).toEqual({ ok: true, voided: 10, replayed: false });
      expect(await tg().credits.voidGrant(id, g, { operationId: 'v1' })).toEqual({ ok: true, voided: 10, replayed: true });
      expect(await tg().credits.voidGrant(id, g, { operationId: 'v2' })).toEqual({ ok: true, voided: 0, replayed: false });
      await expect(tg().credits.voidGrant(id, 'g9', { operationId: 'v3' })).rejects.toThrowError(GrantNotFoundError);
      await expect(tg().credits.voidGrant(id, 'cycle:1', { operationId: 'v4' })).rejects.toThrowError(InvalidInputError);
      const other = await grant(id, { amount: 1 });
      await expect(tg().credits.voidGrant(id, other, { operationId: 'v1' })).rejects.toThrowError(InvalidInputError);
      expect((await tg().usage(id)).credits.available).toBe(31);
      await expectBalanced(id);
    });
  });

  describe('adjust', () => {
    it('+n adds an adjustment grant without expiry; -n takes n in spend order or nothing', async () => {
      const id = await account();
      const plus = await tg().credits.adjust(id, { amount: 5, reason: 'goodwill', operationId: 'adj-1' });
      expect(plus).toEqual({ ok: true, amount: 5, grantId: 'g1', sources: [{ grantId: 'g1', amount: 5 }], available: 35, replayed: false });
      expect(await byId(id, 'g1')).toMatchObject({ kind: 'adjustment', priority: 50, expiresAt: null, reason: 'goodwill' });
      expect(await tg().credits.adjust(id, { amount: 5, reason: 'goodwill', operationId: 'adj-1' })).toMatchObject({ replayed: true, grantId: 'g1' });
      const minus = await tg().credits.adjust(id, { amount: -32, reason: 'correction', operationId: 'adj-2' });
      expect(minus).toEqual({
        ok: true,
        amount: -32,
        grantId: null,
        sources: [
          { grantId: 'cycle:1', amount: 30 },
          { grantId: 'g1', amount: 2 },
        ],
        available: 3,
        replayed: false,
      });
      expect(await tg().credits.adjust(id, { amount: -4, reason: 'too much', operationId: 'adj-3' })).toEqual({
        ok: false,
        reason: 'insufficient',
        available: 3,
        needed: 4,
      });
      await expect(tg().credits.adjust(id, { amount: -3, reason: 'other terms', operationId: 'adj-2' })).rejects.toThrowError(InvalidInputError);
      expect((await tg().usage(id)).credits).toMatchObject({ balance: 0, spent: 30, available: 3 });
      await expectBalanced(id);
    });
  });

  describe('refund', () => {
    it('gives a charge back to the sources that paid it, last drawn first, partially and at most once in all', async () => {
      const id = await account();
      const g = await grant(id, { amount: 20 });
      expect(await tg().credits.charge(id, { required: 40, operationId: 'req-1' })).toMatchObject({
        sources: [
          { grantId: 'cycle:1', amount: 30 },
          { grantId: g, amount: 10 },
        ],
      });
      expect(await tg().credits.refund(id, { charge: 'req-1', amount: 15, operationId: 'ref-1' })).toEqual({
        ok: true,
        refunded: 15,
        sources: [
          { grantId: g, amount: 10 },
          { grantId: 'cycle:1', amount: 5 },
        ],
        replayed: false,
      });
      expect(await tg().credits.refund(id, { charge: 'req-1', amount: 15, operationId: 'ref-1' })).toMatchObject({ ok: true, refunded: 15, replayed: true });
      expect((await tg().usage(id)).credits).toMatchObject({ balance: 5, spent: 25, available: 25 });
      expect(await tg().credits.refund(id, { charge: 'req-1', amount: 26, operationId: 'ref-2' })).toEqual({ ok: false, reason: 'exceeds_charge' });
      expect(await tg().credits.refund(id, { charge: 'req-1', operationId: 'ref-3' })).toMatchObject({
        ok: true,
        refunded: 25,
        sources: [{ grantId: 'cycle:1', amount: 25 }],
      });
      expect(await tg().credits.refund(id, { charge: 'req-1', operationId: 'ref-4' })).toEqual({ ok: false, reason: 'exceeds_charge' });
      expect(await tg().credits.refund(id, { charge: 'req-unknown', operationId: 'ref-5' })).toEqual({ ok: false, reason: 'unknown_charge' });
      await expect(tg().credits.refund(id, { charge: 'req-1', amount: 1, operationId: 'ref-1' })).rejects.toThrowError(InvalidInputError);
      expect((await tg().usage(id)).credits).toMatchObject({ balance: 30, spent: 0, available: 50 });
      expect((await tg().credits.history(id)).at(-1)).toMatchObject({ spent: 40, refunded: 40 });
      await expectBalanced(id);
    });

    it('a charge is refundable while its operation id is kept (operationTtlMs), not a moment longer', async () => {
      const id = await account();
      await tg().credits.charge(id, { required: 4, operationId: 'req-kept' });
      gate.clock.set(TEST_START + 40 * DAY - 1);
      expect(await tg().credits.refund(id, { charge: 'req-kept', amount: 1, operationId: 'ref-kept-1' })).toMatchObject({ ok: true, refunded: 1 });
      gate.clock.set(TEST_START + 40 * DAY);
      expect(await tg().credits.refund(id, { charge: 'req-kept', operationId: 'ref-kept-2' })).toEqual({ ok: false, reason: 'unknown_charge' });
    });

    it('a refund to a source that has ended is its refundedAfterEnd (an ended cycle: its refunded) and raises no balance', async () => {
      const id = await account();
      const g = await grant(id, { amount: 10, expiresAt: TEST_START + DAY, priority: 0 });
      await tg().credits.charge(id, { required: 15, operationId: 'req-2' });
      gate.clock.set(TEST_START + 31 * DAY);
      expect(await tg().credits.refund(id, { charge: 'req-2', operationId: 'ref-6' })).toMatchObject({
        ok: true,
        refunded: 15,
        sources: [
          { grantId: 'cycle:1', amount: 5 },
          { grantId: g, amount: 10 },
        ],
      });
      expect(await byId(id, g)).toMatchObject({ status: 'expired', spent: 0, refundedAfterEnd: 10 });
      expect(await byId(id, 'cycle:1')).toMatchObject({ status: 'expired', spent: 0, refundedAfterEnd: 5, expired: 25 });
      expect((await tg().accounts.endedCycles(id))[0]).toMatchObject({ refunded: 5, spent: 0 });
      expect((await tg().usage(id)).credits).toMatchObject({ balance: 30, available: 30 });
      await expectBalanced(id);
    });
  });

  describe('bounds', () => {
    it('at most grants.max live or pending grants (16 by default): grant_limit_reached, unless used grants can be archived', async () => {
      const id = await account();
      for (let i = 0; i < 16; i++) await grant(id, { amount: 1, priority: i });
      expect(await tg().credits.grant(id, { amount: 1, operationId: 'one-more' })).toEqual({ ok: false, reason: 'grant_limit_reached' });
      await expect(tg().credits.adjust(id, { amount: 1, reason: 'no room', operationId: 'adj-x' })).rejects.toThrowError(/grant limit reached/);
      // The two first grants are used up: the oldest used one is archived to make room.
      await tg().credits.charge(id, { required: 2 });
      expect(await tg().credits.grant(id, { amount: 1, operationId: 'one-more' })).toEqual({ ok: true, grantId: 'g17', replayed: false });
      expect(await byId(id, 'g1')).toMatchObject({ status: 'used', spent: 1, endedAt: TEST_START });
      expect(await listed(id)).not.toContain('g1:used');
      expect(await listed(id)).toContain('g2:used');
      await expectBalanced(id);
    });

    it('createTollgate takes grants.max up to 64', async () => {
      await expect(openTollgate(kind, 'grants-max', { grants: { max: 65 } })).rejects.toThrowError(InvalidInputError);
      const wide = await openTollgate(kind, 'grants-max', { grants: { max: 64 } });
      try {
        const id = await newAccount(wide.tg, 'free');
        for (let i = 0; i < 64; i++) expect(await wide.tg.credits.grant(id, { amount: 1, operationId: `w${i}` })).toMatchObject({ ok: true });
        expect(await wide.tg.credits.grant(id, { amount: 1, operationId: 'w64' })).toEqual({ ok: false, reason: 'grant_limit_reached' });
        expect(await wide.tg.credits.charge(id, { required: 31 })).toMatchObject({
          sources: [
            { grantId: 'cycle:1', amount: 30 },
            { grantId: 'g1', amount: 1 },
          ],
          available: 63,
        });
      } finally {
        await wide.close();
      }
    });

    it('ended grants are archived and listable, the newest 100 kept', async () => {
      const id = await account();
      for (let i = 0; i < 105; i++) {
        const g = await grant(id, { amount: 1 });
        await tg().credits.voidGrant(id, g, { operationId: `void-${g}` });
        gate.clock.advance(1);
      }
      const ended = (await tg().credits.grants(id, { ended: true })).filter((g) => g.grantId.startsWith('g'));
      expect(ended).toHaveLength(100);
      expect(ended[0]).toMatchObject({ grantId: 'g105', status: 'voided', voided: 1 });
      expect(ended.at(-1)).toMatchObject({ grantId: 'g6' });
      await expect(tg().credits.voidGrant(id, 'g1', { operationId: 'void-again' })).rejects.toThrowError(GrantNotFoundError);
    });
  });
});
