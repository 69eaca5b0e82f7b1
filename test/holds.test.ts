// Holds (docs/holds.md): credits reserved upfront in one step and settled item by item, finished
// or cancelled with refunds to the cycle that paid; through both clients. The sweep has its
// own file (sweep.test.ts), and so do Idempotency-Keys (idempotency.test.ts).
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { createTollgate, type Hold, type OpenOutcome, type RedisScriptClient, type Settlement, type Tollgate } from '../src/index.ts';
import { HoldNotFoundError, InvalidInputError } from '../src/errors.ts';
import { checkInvariants } from '../src/model/index.ts';
import { TEST_START, backends, accountId, connectTestClient, openTollgate, type ClientKind, type TestGate, newAccount } from './helpers/tollgate.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';

const DAY = 86_400_000;
const LEASE = 60_000;

/** The fields of the issue's `Hold` shape, and what the library adds to it. */
const HOLD_FIELDS = [
  'id',
  'kind',
  'status',
  'surface',
  'items',
  'perItem',
  'reserved',
  'settled',
  'delivered',
  'failed',
  'optionalSpent',
  'spent',
  'refunded',
  'refundedToEndedCycle',
  'cycleId',
  'sources',
  'createdAt',
  'endedAt',
  'endReason',
  'held',
  'leaseExpiresAt',
];

function opened(outcome: OpenOutcome): Hold {
  if (!outcome.ok) throw new Error(`open refused: ${outcome.reason}`);
  return outcome.hold;
}

describe.each(backends())('items holds through %s', (kind) => {
  let gate: TestGate;
  let tg: Tollgate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'holds', { leaseMs: LEASE });
    tg = gate.tg;
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START));

  const account = (plan = 'pro') => newAccount(tg, plan);
  async function open(id: string, items: number, required = 1, optional = 0): Promise<Hold> {
    return opened(await tg.holds.open(id, { items, perItem: { required, optional } }));
  }
  /** Settles `times` items of the hold, each with an item id of its own; returns the last outcome. */
  let item = 0;
  async function settle(id: string, holdId: string, times: number, settlement: Omit<Settlement, 'itemId'> = {}) {
    let last;
    for (let i = 0; i < times; i++) last = await tg.holds.settle(id, holdId, { itemId: `item-${++item}`, ...settlement });
    return last!;
  }
  const credits = async (id: string) => (await tg.usage(id)).credits;
  async function expectSound(id: string) {
    expect(checkInvariants(await tg.accounts.inspect(id)), id).toEqual([]);
  }

  describe('open', () => {
    it('reserves items x (required + optional) upfront: 500 x 1 -> 500, 100 x (1 + 1) -> 200', async () => {
      const id = await account();
      const plain = await open(id, 500);
      const withOptional = await open(id, 100, 1, 1);
      expect([plain.reserved, withOptional.reserved]).toEqual([500, 200]);
      expect(plain).toMatchObject({
        kind: 'items',
        status: 'open',
        surface: 'api',
        items: 500,
        perItem: { required: 1, optional: 0 },
        held: 500,
        settled: 0,
        spent: 0,
        cycleId: 1,
        createdAt: TEST_START,
        leaseExpiresAt: TEST_START + LEASE,
      });
      expect(await credits(id)).toMatchObject({ balance: 4300, held: 700, spent: 0 });
      await expectSound(id);
    });

    it('the hold record has every field of the Hold shape, the same from open, settle, end, get, list and inspect', async () => {
      const id = await account();
      const fresh = await open(id, 3, 2, 1);
      expect(Object.keys(fresh).sort()).toEqual([...HOLD_FIELDS].sort());
      expect(fresh).toEqual({
        id: fresh.id,
        kind: 'items',
        status: 'open',
        surface: 'api',
        items: 3,
        perItem: { required: 2, optional: 1 },
        reserved: 9,
        settled: 0,
        delivered: 0,
        failed: {},
        optionalSpent: 0,
        spent: 0,
        refunded: 0,
        refundedToEndedCycle: 0,
        held: 9,
        cycleId: 1,
        sources: [{ grantId: 'cycle:1', amount: 9 }],
        createdAt: TEST_START,
        endedAt: null,
        endReason: null,
        leaseExpiresAt: TEST_START + LEASE,
      });
      expect(fresh.id).toMatch(/^hold_[A-Za-z0-9_-]+$/);
      gate.clock.advance(1000);
      const delivered = await tg.holds.settle(id, fresh.id, { itemId: 'a', optionalSpent: 1 });
      const failed = await tg.holds.settle(id, fresh.id, { itemId: 'b', failed: 'not_found' });
      expect(Object.keys(failed.hold).sort()).toEqual([...HOLD_FIELDS].sort());
      expect(failed.hold).toMatchObject({
        settled: 2,
        delivered: 1,
        failed: { not_found: 1 },
        optionalSpent: 1,
        spent: 3,
        held: 6,
        leaseExpiresAt: TEST_START + 1000 + LEASE,
      });
      expect(delivered.hold.spent).toBe(3);
      expect(await tg.holds.get(id, fresh.id)).toEqual(failed.hold);
      const { hold: ended } = await tg.holds.cancel(id, fresh.id);
      expect(Object.keys(ended).sort()).toEqual([...HOLD_FIELDS].sort());
      expect(ended).toMatchObject({ status: 'canceled', endReason: 'canceled', endedAt: TEST_START + 1000, refunded: 6, held: 0 });
      expect(await tg.holds.get(id, fresh.id)).toEqual(ended);
      expect((await tg.holds.list(id)).holds).toEqual([ended]);
      expect((await tg.accounts.inspect(id)).holds).toEqual([ended]);
    });

    // What Redis runs and stores: memory has no scripts and no keys.
    it.skipIf(kind === 'memory')('costs one script whatever items is: no key per item, and a hold of 5000 items stores what a hold of 1 does', async () => {
      const id = await account('business');
      const sent: string[][] = [];
      const client = await connectTestClient(kind as ClientKind);
      onTestFinished(() => client.close());
      const counting = createTollgate({
        plans: EXAMPLE_PLANS,
        redis: recording(client.adapter, sent),
        prefix: gate.prefix,
        clock: gate.clock.fn,
        leaseMs: LEASE,
      });
      // The scripts' calls only (FCALL, or EVALSHA where functions were refused): a node meeting a
      // script for the first time is sent it again (after FUNCTION LOAD, or by EVAL).
      const called = new Map<string, number>();
      const scripts = () => {
        called.clear();
        for (const words of sent) if (words[0] === 'FCALL' || words[0] === 'EVALSHA') called.set(words[1]!, words.length);
        return [...called].map(([script, length]) => `${script}/${length}`);
      };
      const one = opened(await counting.holds.open(id, { items: 1, perItem: { required: 1 } }));
      const forOne = scripts();
      sent.length = 0;
      const many = opened(await counting.holds.open(id, { items: 5000, perItem: { required: 1, optional: 1 } }));
      // The index mark for the sweep, and the one script that opens the hold.
      expect(forOne).toHaveLength(2);
      expect(scripts()).toEqual(forOne);
      expect(many.reserved).toBe(10_000);
      const keys = ((await gate.command(['KEYS', `${gate.prefix}:{${id}}:*`])) as string[]).map((k) => k.slice(`${gate.prefix}:{${id}}:`.length)).sort();
      // account, journal, open holds, every hold, and the two holds: nothing per item.
      expect(keys).toEqual(['a', `h:${many.id}`, `h:${one.id}`, 'ha', 'hl', 'jn'].sort());
      const fields = async (holdId: string) => Number(await gate.command(['HLEN', `${gate.prefix}:{${id}}:h:${holdId}`]));
      expect(await fields(many.id)).toBe(await fields(one.id));
    });

    it('insufficient credits are a value with remaining and needed, and reserve nothing', async () => {
      const id = await account('starter');
      expect(await tg.holds.open(id, { items: 600, perItem: { required: 1, optional: 1 } })).toEqual({
        ok: false,
        reason: 'insufficient',
        balance: 1000,
        remaining: 1000,
        needed: 1200,
        available: 1000,
      });
      expect(await credits(id)).toMatchObject({ balance: 1000, held: 0 });
      expect((await tg.holds.list(id)).total).toBe(0);
    });

    it("a surface outside the plan's holds.surfaces is refused: surface_not_allowed, nothing reserved", async () => {
      const id = await account('free');
      expect(await tg.holds.open(id, { items: 1, perItem: { required: 1 } })).toEqual({
        ok: false,
        reason: 'surface_not_allowed',
        surface: 'api',
        surfaces: ['web'],
        allowed: ['web'],
      });
      expect(await tg.holds.openBudget(id, { amount: 3, surface: 'api' })).toEqual({
        ok: false,
        reason: 'surface_not_allowed',
        surface: 'api',
        surfaces: ['web'],
        allowed: ['web'],
      });
      expect(await credits(id)).toMatchObject({ balance: 30, held: 0 });
      expect(opened(await tg.holds.open(id, { items: 2, perItem: { required: 1 }, surface: 'web' })).surface).toBe('web');
    });

    it("more items than the plan's holds.maxItems: too_many_items; exactly maxItems opens", async () => {
      const id = await account('business');
      expect(await tg.holds.open(id, { items: 5001, perItem: { required: 1 } })).toEqual({ ok: false, reason: 'too_many_items', max: 5000 });
      expect(await credits(id)).toMatchObject({ balance: 20_000, held: 0 });
      expect((await open(id, 5000)).reserved).toBe(5000);
    });

    it("the plan's holds.cap: hold_limit_reached with active and cap, budget holds count too, and an ended hold frees its place", async () => {
      const id = await account('starter');
      const a = await open(id, 1);
      opened(await tg.holds.openBudget(id, { amount: 5 }));
      expect(await tg.holds.open(id, { items: 1, perItem: { required: 1 } })).toEqual({
        ok: false,
        reason: 'hold_limit_reached',
        active: 2,
        cap: 2,
        replayed: false,
      });
      expect(await tg.holds.openBudget(id, { amount: 1 })).toMatchObject({ ok: false, reason: 'hold_limit_reached' });
      expect(await credits(id)).toMatchObject({ balance: 994, held: 6 });
      await tg.holds.cancel(id, a.id);
      expect((await tg.holds.open(id, { items: 1, perItem: { required: 1 } })).ok).toBe(true);
    });

    it('32 concurrent opens with different keys on a cap of 2 -> exactly 2 holds', async () => {
      const id = await account('starter');
      const outcomes = await Promise.all(
        Array.from({ length: 32 }, (_, i) => tg.holds.open(id, { items: 3, perItem: { required: 1 }, idempotency: { key: `k-${i}`, body: { i } } })),
      );
      expect(outcomes.filter((o) => o.ok)).toHaveLength(2);
      expect(outcomes.filter((o) => !o.ok && o.reason === 'hold_limit_reached')).toHaveLength(30);
      expect(await credits(id)).toMatchObject({ balance: 994, held: 6 });
      await expectSound(id);
    });

    it('bad sizes are an InvalidInputError before Redis is touched', async () => {
      const id = await account();
      const { tg: offline } = gateWithoutRedis();
      for (const request of [
        { items: 0, perItem: { required: 1 } },
        { items: 1.5, perItem: { required: 1 } },
        { items: 2, perItem: { required: -1 } },
        { items: 2, perItem: { required: 0, optional: 0 } },
        { items: 2, perItem: { required: 1, optional: Number.NaN } },
      ]) {
        await expect(offline.holds.open(id, request), JSON.stringify(request)).rejects.toBeInstanceOf(InvalidInputError);
      }
      await expect(offline.holds.openBudget(id, { amount: 0 })).rejects.toBeInstanceOf(InvalidInputError);
      await expect(offline.holds.open(id, { items: 1, perItem: { required: 1 }, holdId: 'no spaces' })).rejects.toBeInstanceOf(InvalidInputError);
    });

    it('a hold id chosen by the caller replays its opening; reused with other terms it is an InvalidInputError', async () => {
      const id = await account();
      const first = await tg.holds.open(id, { items: 4, perItem: { required: 1 }, holdId: 'hold_mine' });
      expect(opened(first).id).toBe('hold_mine');
      expect(await tg.holds.open(id, { items: 4, perItem: { required: 1 }, holdId: 'hold_mine' })).toEqual({ ...first, replayed: true });
      await expect(tg.holds.open(id, { items: 5, perItem: { required: 1 }, holdId: 'hold_mine' })).rejects.toThrowError(InvalidInputError);
      await expect(tg.holds.openBudget(id, { amount: 4, holdId: 'hold_mine' })).rejects.toThrowError('Hold id "hold_mine" is already taken');
      expect(await credits(id)).toMatchObject({ held: 4, balance: 4996 });
    });

    it('an opening sent again gets its hold back even after a plan change that would refuse it now, and stores it under its Idempotency-Key', async () => {
      const id = await account('pro');
      const request = { items: 3, perItem: { required: 1 }, holdId: 'hold_again', idempotency: { key: 'again-1', body: { n: 3 } } };
      const first = opened(await tg.holds.open(id, request));
      // free may open holds only on web: a new opening on api would be surface_not_allowed.
      await tg.accounts.changePlan(id, 'free');
      expect(await tg.holds.open(id, request)).toEqual({ ok: true, hold: first, replayed: true });
      expect(await tg.holds.open(id, { items: 3, perItem: { required: 1 } })).toMatchObject({ ok: false, reason: 'surface_not_allowed' });
      // A claim taken with begin and answered by the hold-id replay is stored, not left pending.
      const begun = await tg.idempotency.begin(id, 'again-2', { n: 3 });
      if (begun.state !== 'new') throw new Error(`unexpected ${begun.state}`);
      await tg.holds.open(id, { ...request, idempotency: begun.claim });
      expect(await tg.idempotency.begin(id, 'again-2', { n: 3 })).toEqual({ state: 'replay', outcome: { kind: 'hold', hold: first } });
    });
  });

  describe('settle', () => {
    it('a delivered item spends its required credits and the optionalSpent of its optional ones', async () => {
      const id = await account();
      const hold = await open(id, 4, 2, 3);
      const a = await tg.holds.settle(id, hold.id, { itemId: 'a', optionalSpent: 3 });
      expect(a).toMatchObject({ ok: true, accepted: true, replayed: false, hold: { spent: 5, optionalSpent: 3, delivered: 1, settled: 1, held: 15 } });
      await tg.holds.settle(id, hold.id, { itemId: 'b' });
      const c = await tg.holds.settle(id, hold.id, { itemId: 'c', optionalSpent: 1 });
      expect(c.hold).toMatchObject({ status: 'open', spent: 5 + 2 + 3, optionalSpent: 4, delivered: 3, held: 10 });
      expect(await credits(id)).toMatchObject({ balance: 4980, spent: 10, held: 10 });
      await expectSound(id);
    });

    it('a failed item spends nothing and counts its label on the hold', async () => {
      const id = await account();
      const hold = await open(id, 5, 1, 1);
      await tg.holds.settle(id, hold.id, { itemId: 'x1', failed: 'a' });
      await tg.holds.settle(id, hold.id, { itemId: 'x2', failed: 'b.2' });
      const last = await tg.holds.settle(id, hold.id, { itemId: 'x3', failed: 'a' });
      expect(last).toMatchObject({
        ok: true,
        accepted: true,
        hold: { status: 'open', failed: { a: 2, 'b.2': 1 }, settled: 3, delivered: 0, spent: 0, held: 10 },
      });
      expect(await credits(id)).toMatchObject({ balance: 4990, spent: 0, held: 10 });
    });

    it('the last item ends the hold with its refund', async () => {
      const id = await account();
      const hold = await open(id, 3, 1, 1);
      await tg.holds.settle(id, hold.id, { itemId: 'a', optionalSpent: 1 });
      await tg.holds.settle(id, hold.id, { itemId: 'b' });
      gate.clock.advance(500);
      const last = await tg.holds.settle(id, hold.id, { itemId: 'c', failed: 'gone' });
      expect(last).toMatchObject({
        ok: true,
        accepted: true,
        hold: { status: 'completed', endReason: 'settled', endedAt: TEST_START + 500, spent: 3, refunded: 3, held: 0 },
      });
      expect(await credits(id)).toMatchObject({ balance: 4997, spent: 3, held: 0 });
      expect((await tg.usage(id)).holds.active).toBe(0);
      expect(await tg.holds.settle(id, hold.id, { itemId: 'd' })).toMatchObject({
        ok: false,
        accepted: false,
        reason: 'hold_ended',
        hold: { settled: 3, spent: 3 },
      });
      await expectSound(id);
    });

    it('an itemId settles once: a repeat is a replay that changes nothing, whatever it says', async () => {
      const id = await account();
      const hold = await open(id, 3, 1, 1);
      const first = await tg.holds.settle(id, hold.id, { itemId: 'same', optionalSpent: 1 });
      gate.clock.advance(1000);
      const again = await tg.holds.settle(id, hold.id, { itemId: 'same', optionalSpent: 1 });
      const otherwise = await tg.holds.settle(id, hold.id, { itemId: 'same', failed: 'late' });
      expect(again).toEqual({ ok: true, accepted: true, replayed: true, hold: first.hold });
      expect(otherwise).toEqual({ ok: true, accepted: true, replayed: true, hold: first.hold });
      expect(await credits(id)).toMatchObject({ spent: 2, held: 4 });
    });

    it('the settlement that ended the hold, sent again, is a replay and not a refusal', async () => {
      const id = await account();
      const hold = await open(id, 1);
      const first = await tg.holds.settle(id, hold.id, { itemId: 'only', failed: 'none' });
      expect(first).toMatchObject({ ok: true, accepted: true, replayed: false, hold: { status: 'completed', refunded: 1 } });
      expect(await tg.holds.settle(id, hold.id, { itemId: 'only', failed: 'none' })).toEqual({ ok: true, accepted: true, replayed: true, hold: first.hold });
      expect(await tg.holds.settle(id, hold.id, { itemId: 'another' })).toMatchObject({ ok: false, accepted: false, reason: 'hold_ended' });
    });

    it('labels are 1-64 of [a-z0-9_.-]; anything else is an InvalidInputError before Redis is touched', async () => {
      const id = await account();
      const hold = await open(id, 5);
      const { tg: offline, sent } = gateWithoutRedis();
      for (const failed of ['', 'A', 'a b', 'ä', 'x'.repeat(65), 'a/b', 7 as unknown as string, null as unknown as string]) {
        await expect(offline.holds.settle(id, hold.id, { itemId: 'i', failed }), JSON.stringify(failed)).rejects.toBeInstanceOf(InvalidInputError);
      }
      expect(sent).toEqual([]);
      for (const failed of ['a', 'x'.repeat(64), 'not_found', 'v1.2-beta']) {
        expect((await tg.holds.settle(id, hold.id, { itemId: `ok-${failed}`, failed })).accepted, failed).toBe(true);
      }
      expect(await credits(id)).toMatchObject({ spent: 0 });
    });

    it('a 17th distinct label on a hold is refused: too_many_labels, nothing changes, and its item may settle later', async () => {
      const id = await account();
      const hold = await open(id, 20);
      for (let i = 0; i < 16; i++) await tg.holds.settle(id, hold.id, { itemId: `i${i}`, failed: `label_${i}` });
      gate.clock.advance(1000);
      const refused = await tg.holds.settle(id, hold.id, { itemId: 'i16', failed: 'label_16' });
      expect(refused).toMatchObject({ ok: false, accepted: false, reason: 'too_many_labels', hold: { settled: 16, leaseExpiresAt: TEST_START + LEASE } });
      expect(Object.keys(refused.hold.failed)).toHaveLength(16);
      expect(await tg.holds.get(id, hold.id)).toEqual(refused.hold);
      // A label already counted is still taken, and the refused item was not used up.
      expect(await tg.holds.settle(id, hold.id, { itemId: 'i16', failed: 'label_3' })).toMatchObject({
        ok: true,
        accepted: true,
        replayed: false,
        hold: { settled: 17, failed: { label_3: 2 } },
      });
      expect(await tg.holds.settle(id, hold.id, { itemId: 'i17' })).toMatchObject({ ok: true, accepted: true, hold: { delivered: 1 } });
    });

    it('optionalSpent above the optional credits per item is an InvalidInputError, and nothing changes', async () => {
      const id = await account();
      const hold = await open(id, 2, 1, 1);
      await expect(tg.holds.settle(id, hold.id, { itemId: 'a', optionalSpent: 2 })).rejects.toBeInstanceOf(InvalidInputError);
      const none = await open(id, 1);
      await expect(tg.holds.settle(id, none.id, { itemId: 'a', optionalSpent: 1 })).rejects.toBeInstanceOf(InvalidInputError);
      expect(await tg.holds.get(id, hold.id)).toEqual(hold);
      expect(await credits(id)).toMatchObject({ spent: 0, held: 5 });
      // The item was not used up by the refusal.
      expect(await tg.holds.settle(id, hold.id, { itemId: 'a', optionalSpent: 1 })).toMatchObject({
        ok: true,
        accepted: true,
        replayed: false,
        hold: { spent: 2 },
      });
      const { tg: offline, sent } = gateWithoutRedis();
      for (const settlement of [{ optionalSpent: -1 }, { optionalSpent: 0.5 }, { optionalSpent: 1, failed: 'a' }]) {
        await expect(offline.holds.settle(id, hold.id, { itemId: 'b', ...settlement }), JSON.stringify(settlement)).rejects.toBeInstanceOf(InvalidInputError);
      }
      expect(sent).toEqual([]);
    });

    it('every settlement renews the lease', async () => {
      const id = await account();
      const hold = await open(id, 10);
      for (let i = 0; i < 5; i++) {
        gate.clock.advance(LEASE - 1000);
        const r = await settle(id, hold.id, 1, i % 2 ? {} : { failed: 'x' });
        expect(r).toMatchObject({ ok: true, accepted: true, hold: { leaseExpiresAt: gate.clock.now + LEASE } });
      }
      expect((await tg.holds.get(id, hold.id)).status).toBe('open');
    });

    it('holds.renew renews the lease from now without settling anything, as often as the work needs', async () => {
      const id = await account();
      const hold = await open(id, 1, 0, 4096);
      for (let i = 0; i < 5; i++) {
        gate.clock.advance(LEASE - 1);
        expect(await tg.holds.renew(id, hold.id)).toEqual({ ok: true, leaseUntil: gate.clock.now + LEASE });
      }
      expect(await tg.holds.get(id, hold.id)).toMatchObject({ status: 'open', settled: 0, spent: 0, held: 4096, leaseExpiresAt: gate.clock.now + LEASE });
      // The work ran 5 leases long and is still charged: its settlement is accepted.
      gate.clock.advance(LEASE - 1);
      expect(await tg.holds.settle(id, hold.id, { itemId: 'completion', optionalSpent: 1234 })).toMatchObject({
        accepted: true,
        hold: { status: 'completed', spent: 1234, refunded: 2862 },
      });
      expect(await credits(id)).toMatchObject({ balance: 5000 - 1234, spent: 1234, held: 0 });
      await expectSound(id);
    });

    it('holds.renew of an ended hold, or of one whose lease ran out (it ends then, with its refunds), is ended; an unknown id throws', async () => {
      const id = await account();
      const finished = await open(id, 2);
      await tg.holds.finish(id, finished.id);
      expect(await tg.holds.renew(id, finished.id)).toEqual({ ok: false, reason: 'ended' });
      const lapsing = await open(id, 10);
      gate.clock.advance(LEASE);
      expect(await tg.holds.renew(id, lapsing.id)).toEqual({ ok: false, reason: 'ended' });
      expect(await tg.holds.get(id, lapsing.id)).toMatchObject({ status: 'completed', endReason: 'lease_expired', refunded: 10, held: 0 });
      expect(await credits(id)).toMatchObject({ balance: 5000, held: 0 });
      await expect(tg.holds.renew(id, 'no-such-hold')).rejects.toBeInstanceOf(HoldNotFoundError);
      await expectSound(id);
    });

    it("a hold's own leaseMs (up to 62 days) is its lease at opening, on each settlement and on renew", async () => {
      const id = await account();
      const long = opened(await tg.holds.open(id, { items: 3, perItem: { required: 1 }, leaseMs: 62 * DAY }));
      expect(long.leaseExpiresAt).toBe(TEST_START + 62 * DAY);
      const short = opened(await tg.holds.open(id, { items: 3, perItem: { required: 1 }, leaseMs: 1_000 }));
      expect(short.leaseExpiresAt).toBe(TEST_START + 1_000);
      gate.clock.advance(500);
      expect((await settle(id, short.id, 1)).hold.leaseExpiresAt).toBe(gate.clock.now + 1_000);
      expect(await tg.holds.renew(id, long.id)).toEqual({ ok: true, leaseUntil: gate.clock.now + 62 * DAY });
      gate.clock.advance(LEASE);
      // The deployment's lease has passed: only the short hold lapsed.
      expect((await tg.holds.get(id, short.id)).endReason).toBe('lease_expired');
      expect((await tg.holds.get(id, long.id)).status).toBe('open');
      const budget = opened(await tg.holds.openBudget(id, { amount: 5, leaseMs: 7 * DAY }));
      expect(budget).toMatchObject({ surface: 'api', leaseExpiresAt: gate.clock.now + 7 * DAY });
      for (const leaseMs of [0, 62 * DAY + 1, 1.5, -1, '60000']) {
        await expect(tg.holds.open(id, { items: 1, perItem: { required: 1 }, leaseMs: leaseMs as number })).rejects.toThrowError(InvalidInputError);
        await expect(tg.holds.openBudget(id, { amount: 1, leaseMs: leaseMs as number })).rejects.toThrowError(InvalidInputError);
      }
      await expectSound(id);
    });

    it('a settlement after the lease ran out is refused and changes nothing; the hold ends then with its refunds', async () => {
      const id = await account();
      const hold = await open(id, 10);
      gate.clock.advance(LEASE - 1);
      expect((await settle(id, hold.id, 1)).accepted).toBe(true);
      gate.clock.advance(LEASE);
      const late = await tg.holds.settle(id, hold.id, { itemId: 'late' });
      expect(late).toMatchObject({
        ok: false,
        accepted: false,
        reason: 'lease_expired',
        hold: { status: 'completed', endReason: 'lease_expired', endedAt: gate.clock.now, settled: 1, spent: 1, refunded: 9, held: 0 },
      });
      expect(await tg.holds.settle(id, hold.id, { itemId: 'later' })).toMatchObject({ ok: false, accepted: false, reason: 'hold_ended', hold: { spent: 1 } });
      expect(await credits(id)).toMatchObject({ balance: 4999, held: 0, spent: 1 });
      await expectSound(id);
    });

    it('a lapsed hold is ended by any touch of the subject, not only by a settlement or the sweep', async () => {
      const id = await account('starter');
      await open(id, 10);
      await open(id, 5);
      gate.clock.advance(LEASE);
      // The cap is full of lapsed holds: opening ends them first.
      const fresh = await tg.holds.open(id, { items: 1, perItem: { required: 1 } });
      expect(fresh.ok).toBe(true);
      const list = await tg.holds.list(id);
      expect(list.holds.map((h) => h.endReason)).toEqual([null, 'lease_expired', 'lease_expired']);
      expect(await credits(id)).toMatchObject({ balance: 999, held: 1 });
    });

    it('late settlements after cancel are refused and change nothing', async () => {
      const id = await account();
      const hold = await open(id, 10, 1, 1);
      await settle(id, hold.id, 1, { optionalSpent: 1 });
      await tg.holds.cancel(id, hold.id);
      const late = await tg.holds.settle(id, hold.id, { itemId: 'late', optionalSpent: 1 });
      expect(late).toMatchObject({ ok: false, accepted: false, reason: 'hold_ended', hold: { status: 'canceled', delivered: 1, spent: 2, refunded: 18 } });
      expect(await credits(id)).toMatchObject({ balance: 4998, spent: 2, held: 0 });
    });
  });

  describe('finish and cancel', () => {
    it('finish ends the hold now as completed and refunds what it did not use', async () => {
      const id = await account();
      const hold = await open(id, 10, 1, 1);
      await settle(id, hold.id, 2, { optionalSpent: 1 });
      await settle(id, hold.id, 1);
      const done = await tg.holds.finish(id, hold.id);
      expect(done).toMatchObject({ ok: true, ended: true, hold: { status: 'completed', endReason: 'finished', spent: 5, refunded: 15, held: 0 } });
      expect(await tg.holds.finish(id, hold.id)).toMatchObject({ ok: false, ended: false, hold: { refunded: 15 } });
      expect(await credits(id)).toMatchObject({ balance: 4995, spent: 5, held: 0 });
    });

    it('cancel refunds everything still held; a second cancel refunds nothing and is free', async () => {
      const id = await account();
      const hold = await open(id, 10);
      const first = await tg.holds.cancel(id, hold.id);
      expect(first).toMatchObject({ ok: true, ended: true, hold: { status: 'canceled', endReason: 'canceled', refunded: 10, held: 0 } });
      const before = await tg.accounts.inspect(id);
      const again = await tg.holds.cancel(id, hold.id);
      expect(again).toEqual({ ok: false, ended: false, hold: first.hold });
      expect(await tg.holds.finish(id, hold.id)).toEqual({ ok: false, ended: false, hold: first.hold });
      expect((await tg.accounts.inspect(id)).credits).toEqual(before.credits);
      expect(await credits(id)).toMatchObject({ balance: 5000, spent: 0, held: 0 });
      expect((await tg.credits.reconcile(id)).matches).toBe(true);
    });
  });

  describe("the seed's examples in general words", () => {
    it('500 items x 1 required: 480 delivered, 15 failed "a", 5 failed "b" -> refund 20, net spend 480', async () => {
      const id = await account();
      const hold = await open(id, 500);
      expect(await credits(id)).toMatchObject({ balance: 4500, held: 500 });
      await settle(id, hold.id, 480);
      await settle(id, hold.id, 15, { failed: 'a' });
      const last = await settle(id, hold.id, 5, { failed: 'b' });
      expect(last).toMatchObject({
        ok: true,
        accepted: true,
        hold: { status: 'completed', endReason: 'settled', delivered: 480, failed: { a: 15, b: 5 }, spent: 480, refunded: 20, held: 0 },
      });
      expect(await credits(id)).toMatchObject({ balance: 4520, spent: 480, held: 0 });
      await expectSound(id);
    });

    it('cancel after 100 delivered, nothing else done -> refund 400', async () => {
      const id = await account();
      const hold = await open(id, 500);
      await settle(id, hold.id, 100);
      expect(await tg.holds.cancel(id, hold.id)).toMatchObject({ ok: true, ended: true, hold: { status: 'canceled', spent: 100, refunded: 400, held: 0 } });
      expect(await credits(id)).toMatchObject({ balance: 4900, spent: 100, held: 0 });
    });

    it('with optional 1 too: 500 x (1 + 1), 480 delivered of which 300 used their optional credit, 20 failed -> spent 780, refund 220', async () => {
      const id = await account();
      const hold = await open(id, 500, 1, 1);
      expect(hold.reserved).toBe(1000);
      await settle(id, hold.id, 300, { optionalSpent: 1 });
      await settle(id, hold.id, 180);
      await settle(id, hold.id, 15, { failed: 'a' });
      const last = await settle(id, hold.id, 5, { failed: 'b' });
      expect(last.hold).toMatchObject({ status: 'completed', delivered: 480, optionalSpent: 300, spent: 780, refunded: 220 });
      expect(await credits(id)).toMatchObject({ balance: 4220, spent: 780, held: 0 });
    });

    it('with optional 1 too: cancel after 100 delivered with their optional credit -> refund 800', async () => {
      const id = await account();
      const hold = await open(id, 500, 1, 1);
      await settle(id, hold.id, 100, { optionalSpent: 1 });
      expect(await tg.holds.cancel(id, hold.id)).toMatchObject({
        ok: true,
        ended: true,
        hold: { reserved: 1000, spent: 200, refunded: 800, optionalSpent: 100 },
      });
      expect(await credits(id)).toMatchObject({ balance: 4800, spent: 200, held: 0 });
    });
  });

  describe('refunds go to the cycle that paid', () => {
    it("a refund to a cycle that has ended is recorded on the hold and that cycle's summary, and the current balance does not change", async () => {
      const id = await account();
      const hold = await open(id, 100, 1, 1);
      await settle(id, hold.id, 30, { optionalSpent: 1 });
      gate.clock.advance(40 * DAY);
      await tg.accounts.startCycle(id);
      expect(await credits(id)).toMatchObject({ balance: 5000, held: 0, spent: 0 });
      // The lease ran out during the 40 days: the hold ended when the account was touched.
      expect(await tg.holds.get(id, hold.id)).toMatchObject({
        status: 'completed',
        endReason: 'lease_expired',
        spent: 60,
        refunded: 140,
        refundedToEndedCycle: 140,
        cycleId: 1,
        held: 0,
      });
      expect(await credits(id)).toMatchObject({ balance: 5000, spent: 0, held: 0 });
      const [cycle1] = await tg.accounts.endedCycles(id);
      expect(cycle1).toMatchObject({ id: 1, allowance: 5000, spent: 60, held: 0, refunded: 140, unused: 4800 });
      await expectSound(id);
      expect((await tg.credits.reconcile(id)).matches).toBe(true);
    });

    it('settlements after a new cycle spend from the paying cycle; cancel refunds to it', async () => {
      const id = await account();
      const hold = await open(id, 10, 1, 2);
      gate.clock.advance(LEASE / 2);
      await tg.accounts.startCycle(id);
      expect(await credits(id)).toMatchObject({ balance: 5000, held: 0 });
      expect((await tg.accounts.endedCycles(id))[0]).toMatchObject({ held: 30, unused: 4970 });
      await settle(id, hold.id, 3, { optionalSpent: 2 });
      await settle(id, hold.id, 1, { failed: 'a' });
      const { hold: ended } = await tg.holds.cancel(id, hold.id);
      expect(ended).toMatchObject({ spent: 9, refunded: 21, refundedToEndedCycle: 21, cycleId: 1 });
      expect(await credits(id)).toMatchObject({ balance: 5000, spent: 0, held: 0 });
      expect((await tg.accounts.endedCycles(id))[0]).toMatchObject({ spent: 9, refunded: 21, held: 0, unused: 4970 });
      await expectSound(id);
    });

    it('a budget hold of an ended cycle refunds its unused part to that cycle', async () => {
      const id = await account();
      const budget = opened(await tg.holds.openBudget(id, { amount: 10 }));
      await tg.holds.spend(id, budget.id, { itemId: 'p1', amount: 4 });
      await tg.accounts.startCycle(id);
      expect(await tg.holds.finish(id, budget.id)).toMatchObject({ ok: true, ended: true, hold: { spent: 4, refunded: 6, refundedToEndedCycle: 6 } });
      expect(await credits(id)).toMatchObject({ balance: 5000, spent: 0, held: 0 });
      expect((await tg.accounts.endedCycles(id))[0]).toMatchObject({ spent: 4, refunded: 6, held: 0, unused: 4990 });
    });
  });

  describe('ownership and listing', () => {
    it("another subject's hold id is not found: HoldNotFoundError, and the owner's hold is untouched", async () => {
      const owner = await account();
      const other = await account();
      const hold = await open(owner, 5);
      const budget = opened(await tg.holds.openBudget(owner, { amount: 5 }));
      await expect(tg.holds.get(other, hold.id)).rejects.toBeInstanceOf(HoldNotFoundError);
      await expect(tg.holds.settle(other, hold.id, { itemId: 'a' })).rejects.toBeInstanceOf(HoldNotFoundError);
      await expect(tg.holds.spend(other, budget.id, { itemId: 'a' })).rejects.toBeInstanceOf(HoldNotFoundError);
      await expect(tg.holds.finish(other, hold.id)).rejects.toBeInstanceOf(HoldNotFoundError);
      await expect(tg.holds.cancel(other, hold.id)).rejects.toMatchObject({ name: 'HoldNotFoundError', code: 'hold_not_found', holdId: hold.id });
      expect(await tg.holds.get(owner, hold.id)).toEqual(hold);
      expect(await credits(other)).toMatchObject({ balance: 5000, spent: 0, held: 0 });
    });

    it("lists a subject's holds newest first with the active count", async () => {
      const id = await account();
      const a = await open(id, 1);
      gate.clock.advance(1);
      const b = opened(await tg.holds.openBudget(id, { amount: 2 }));
      gate.clock.advance(1);
      const c = await open(id, 3);
      await tg.holds.cancel(id, a.id);
      const list = await tg.holds.list(id);
      expect(list).toMatchObject({ total: 3, active: 2 });
      expect(list.holds.map((h) => h.id)).toEqual([c.id, b.id, a.id]);
      expect((await tg.holds.list(id, { offset: 1, limit: 1 })).holds.map((h) => h.id)).toEqual([b.id]);
    });
  });
});

describe.each(backends())('budget holds through %s', (kind) => {
  let gate: TestGate;
  let tg: Tollgate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'budgets', { leaseMs: LEASE });
    tg = gate.tg;
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START));

  async function budget(amount: number, plan = 'free') {
    const id = accountId();
    await tg.accounts.create(id, { plan });
    return { id, hold: opened(await tg.holds.openBudget(id, { amount, surface: 'web' })) };
  }
  const credits = async (id: string) => (await tg.usage(id)).credits;

  it('opens on the api surface by default, as holds.open does', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'pro' });
    expect(opened(await tg.holds.openBudget(id, { amount: 4 })).surface).toBe('api');
    const web = accountId();
    await tg.accounts.create(web, { plan: 'free' });
    expect(await tg.holds.openBudget(web, { amount: 4 })).toMatchObject({ ok: false, reason: 'surface_not_allowed', surface: 'api', allowed: ['web'] });
  });

  it('reserves the amount on the surface asked for; each spend takes its amount from it', async () => {
    const { id, hold } = await budget(10);
    expect(hold).toMatchObject({ kind: 'budget', surface: 'web', items: 0, perItem: { required: 0, optional: 0 }, reserved: 10, held: 10, status: 'open' });
    expect(await credits(id)).toMatchObject({ balance: 20, held: 10 });
    const r = await tg.holds.spend(id, hold.id, { itemId: 'p1', amount: 3 });
    expect(r).toMatchObject({ ok: true, accepted: true, replayed: false, hold: { spent: 3, held: 7, settled: 1, delivered: 1 } });
    expect((await tg.holds.spend(id, hold.id, { itemId: 'p2' })).hold).toMatchObject({ spent: 4, settled: 2, delivered: 2 });
    expect(await credits(id)).toMatchObject({ balance: 20, spent: 4, held: 6 });
  });

  it('amount 0 takes nothing and renews the lease', async () => {
    const { id, hold } = await budget(5);
    gate.clock.advance(LEASE - 1);
    const empty = await tg.holds.spend(id, hold.id, { itemId: 'empty-1', amount: 0 });
    expect(empty).toMatchObject({
      ok: true,
      accepted: true,
      hold: { spent: 0, held: 5, settled: 1, delivered: 0, leaseExpiresAt: gate.clock.now + LEASE, status: 'open' },
    });
    gate.clock.advance(LEASE - 1);
    expect((await tg.holds.spend(id, hold.id, { itemId: 'p', amount: 1 })).accepted).toBe(true);
    expect(await credits(id)).toMatchObject({ spent: 1, held: 4 });
  });

  it('an amount above what is left is refused with budget_exhausted and takes nothing; the hold ends when used up', async () => {
    const { id, hold } = await budget(5);
    await tg.holds.spend(id, hold.id, { itemId: 'a', amount: 4 });
    const refused = await tg.holds.spend(id, hold.id, { itemId: 'b', amount: 2 });
    expect(refused).toMatchObject({ ok: false, accepted: false, reason: 'budget_exhausted', hold: { status: 'open', spent: 4, held: 1, settled: 1 } });
    expect(await credits(id)).toMatchObject({ spent: 4, held: 1 });
    // The refused item was not used up.
    const last = await tg.holds.spend(id, hold.id, { itemId: 'b', amount: 1 });
    expect(last).toMatchObject({ ok: true, accepted: true, hold: { status: 'completed', endReason: 'exhausted', spent: 5, refunded: 0, held: 0 } });
    expect(await tg.holds.spend(id, hold.id, { itemId: 'c', amount: 0 })).toMatchObject({ ok: false, accepted: false, reason: 'hold_ended' });
    expect(await credits(id)).toMatchObject({ balance: 25, spent: 5, held: 0 });
    expect((await tg.usage(id)).holds.active).toBe(0);
  });

  it('a spend is counted once per item id: a repeat is a replay', async () => {
    const { id, hold } = await budget(5);
    const first = await tg.holds.spend(id, hold.id, { itemId: 'page-1', amount: 2 });
    expect(await tg.holds.spend(id, hold.id, { itemId: 'page-1', amount: 2 })).toEqual({ ok: true, accepted: true, replayed: true, hold: first.hold });
    expect(await credits(id)).toMatchObject({ spent: 2, held: 3 });
  });

  it('finish or cancel refunds the unspent part of the budget', async () => {
    const { id, hold } = await budget(10);
    await tg.holds.spend(id, hold.id, { itemId: 'a' });
    await tg.holds.spend(id, hold.id, { itemId: 'b' });
    expect(await tg.holds.finish(id, hold.id)).toMatchObject({
      ok: true,
      ended: true,
      hold: { status: 'completed', endReason: 'finished', spent: 2, refunded: 8 },
    });
    expect(await credits(id)).toMatchObject({ balance: 28, held: 0, spent: 2 });
    const other = opened(await tg.holds.openBudget(id, { amount: 6, surface: 'web' }));
    expect(await tg.holds.cancel(id, other.id)).toMatchObject({ ok: true, ended: true, hold: { status: 'canceled', refunded: 6 } });
    expect(await credits(id)).toMatchObject({ balance: 28, held: 0, spent: 2 });
  });

  it('a budget above the balance is insufficient; a budget counts toward the cap', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'free' });
    expect(await tg.holds.openBudget(id, { amount: 31, surface: 'web' })).toEqual({
      ok: false,
      reason: 'insufficient',
      balance: 30,
      remaining: 30,
      needed: 31,
      available: 30,
    });
    expect((await tg.holds.openBudget(id, { amount: 5, surface: 'web' })).ok).toBe(true);
    expect(await tg.holds.openBudget(id, { amount: 5, surface: 'web' })).toMatchObject({ ok: false, reason: 'hold_limit_reached', cap: 1 });
  });

  it('spend on an items hold, or settle on a budget hold, is an InvalidInputError and changes nothing', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'pro' });
    const items = opened(await tg.holds.open(id, { items: 2, perItem: { required: 1 } }));
    const coll = opened(await tg.holds.openBudget(id, { amount: 2 }));
    await expect(tg.holds.spend(id, items.id, { itemId: 'a' })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(tg.holds.settle(id, coll.id, { itemId: 'a' })).rejects.toBeInstanceOf(InvalidInputError);
    expect(await credits(id)).toMatchObject({ spent: 0, held: 4 });
    expect((await tg.holds.spend(id, coll.id, { itemId: 'a' })).accepted).toBe(true);
  });

  it('bad amounts are an InvalidInputError before Redis is touched', async () => {
    const { tg: offline, sent } = gateWithoutRedis();
    for (const amount of [-1, 1.5, Number.NaN, '1' as unknown as number]) {
      await expect(offline.holds.spend('acct', 'hold_x', { itemId: 'a', amount }), String(amount)).rejects.toBeInstanceOf(InvalidInputError);
    }
    await expect(offline.holds.spend('acct', 'hold_x', { itemId: '' })).rejects.toBeInstanceOf(InvalidInputError);
    expect(sent).toEqual([]);
  });
});

/** Records every command a tollgate sends, then sends it on. */
function recording(inner: RedisScriptClient, sent: string[][]): RedisScriptClient {
  return { ...inner, send: (words: string[]) => (sent.push(words), inner.send(words)) };
}

/** A tollgate whose Redis records and refuses every command: for checks made before Redis. */
function gateWithoutRedis(): { tg: Tollgate; sent: string[][] } {
  const sent: string[][] = [];
  const adapter = {
    [Symbol.for('tollgate.redisScriptClient')]: true,
    send: async (words: string[]) => (sent.push(words), Promise.reject(new Error('Redis must not be touched'))),
  };
  return { tg: createTollgate({ plans: EXAMPLE_PLANS, redis: adapter as unknown as RedisScriptClient, clock: () => TEST_START }), sent };
}
