// Bounded growth of holds (docs/reliability.md#memory): ended holds are kept endedHolds.keepMs
// and at most endedHolds.max per subject; a hold id stays taken after its record goes; lapsed
// holds are ended by id, at most 32 per script call, so no call does unbounded work.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, type Tollgate } from '../src/index.ts';
import { HoldNotFoundError, InvalidInputError } from '../src/errors.ts';
import { recording } from './helpers/recording.ts';
import { CLIENT_KINDS, ManualClock, accountId, connectTestClient, type TestClient } from './helpers/tollgate.ts';
import { uniquePrefix } from './helpers/redis.ts';

const HOUR = 3_600_000;
const LEASE = 60_000;
const PLANS = {
  wide: {
    limits: { api: [{ limit: 1000, windowMs: 60_000 }] },
    credits: { allowance: 100_000, cycle: { months: 1 } },
    holds: { cap: 100, maxItems: 100, surfaces: ['api'] },
  },
};

describe.each(CLIENT_KINDS)('ended holds and lapsed ones stay bounded, through %s', (kind) => {
  let client: TestClient;
  beforeAll(async () => {
    client = await connectTestClient(kind);
  });
  afterAll(() => client?.close());

  function gate(options: { keepMs?: number; max?: number } = {}) {
    const clock = new ManualClock();
    const recorder = recording(client.adapter);
    const tg = createTollgate({ redis: recorder.client, prefix: uniquePrefix('ended'), clock: clock.fn, leaseMs: LEASE, plans: PLANS, endedHolds: options });
    return { tg, clock, recorder };
  }
  async function openAndFinish(tg: Tollgate, id: string, holdId?: string): Promise<string> {
    const opened = await tg.holds.open(id, { items: 2, perItem: { required: 1 }, surface: 'api', ...(holdId ? { holdId } : {}) });
    if (!opened.ok) throw new Error(opened.reason);
    await tg.holds.settle(id, opened.hold.id, { itemId: 'a' });
    await tg.holds.finish(id, opened.hold.id);
    return opened.hold.id;
  }

  it('a subject keeps at most endedHolds.max ended holds: an opening at the bound drops the oldest first', async () => {
    const { tg, clock } = gate({ max: 20 });
    const id = accountId();
    await tg.accounts.create(id, { plan: 'wide' });
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      ids.push(await openAndFinish(tg, id));
      clock.advance(1000);
      const { total, active } = await tg.holds.list(id, { limit: 0 });
      expect(total - active).toBeLessThanOrEqual(20);
    }
    const kept = (await tg.holds.list(id, { limit: 100 })).holds.map((hold) => hold.id);
    // The newest are kept, newest first; the oldest are gone.
    expect(kept).toEqual(ids.slice(-kept.length).reverse());
    await expect(tg.holds.get(id, ids[0]!)).rejects.toThrowError(HoldNotFoundError);
    // Every credit is accounted for: each hold spent 1 and refunded 1.
    expect((await tg.usage(id)).credits).toMatchObject({ spent: 60, held: 0, balance: 100_000 - 60 });
  });

  it('an ended hold is kept endedHolds.keepMs, then the sweep drops it; its id never opens a new hold', async () => {
    const { tg, clock } = gate({ keepMs: HOUR });
    const id = accountId();
    await tg.accounts.create(id, { plan: 'wide' });
    await openAndFinish(tg, id, 'job-1');
    clock.advance(HOUR - 1);
    await tg.holds.sweepSubject(id);
    expect((await tg.holds.get(id, 'job-1')).status).toBe('completed');
    clock.advance(1);
    await tg.holds.sweepSubject(id);
    expect(await tg.holds.list(id)).toEqual({ total: 0, active: 0, holds: [] });
    // A resent or retried opening with that id is refused: nothing is reserved again.
    const before = (await tg.usage(id)).credits;
    await expect(tg.holds.open(id, { items: 2, perItem: { required: 1 }, surface: 'api', holdId: 'job-1' })).rejects.toThrowError(InvalidInputError);
    await expect(tg.holds.open(id, { items: 2, perItem: { required: 1 }, surface: 'api', holdId: 'job-1' })).rejects.toThrowError(/no longer kept/);
    expect((await tg.usage(id)).credits).toEqual(before);
  });

  it('a sweep of a subject ends at most 32 lapsed holds per script call and goes on in the next', async () => {
    const { tg, clock, recorder } = gate();
    const id = accountId();
    await tg.accounts.create(id, { plan: 'wide' });
    for (let i = 0; i < 80; i++) {
      const opened = await tg.holds.open(id, { items: 1, perItem: { required: 2 }, surface: 'api' });
      if (!opened.ok) throw new Error(opened.reason);
    }
    expect((await tg.usage(id)).credits).toMatchObject({ held: 160 });
    clock.advance(LEASE);
    recorder.calls.length = 0;
    expect(await tg.holds.sweepSubject(id)).toEqual({ ended: 80, nextLeaseAt: null });
    const tidies = recorder.calls.filter((call) => call.script === 'tidyHolds');
    expect(tidies.length).toBeGreaterThanOrEqual(3);
    // The subject's 9 keys, then at most 32 holds.
    for (const call of tidies) expect(call.keys.length - 9).toBeLessThanOrEqual(32);
    expect((await tg.usage(id)).credits).toMatchObject({ held: 0, spent: 0, balance: 100_000 });
    expect((await tg.credits.reconcile(id)).matches).toBe(true);
  });

  it('a read that finds lapsed holds has them ended first, by id, then answers: list pages keep { total, active, holds }', async () => {
    const { tg, clock } = gate();
    const id = accountId();
    await tg.accounts.create(id, { plan: 'wide' });
    for (let i = 0; i < 5; i++) await tg.holds.open(id, { items: 1, perItem: { required: 1 }, surface: 'api' });
    clock.advance(LEASE);
    const page = await tg.holds.list(id, { offset: 1, limit: 2 });
    expect(page.total).toBe(5);
    expect(page.active).toBe(0);
    expect(page.holds.map((hold) => hold.endReason)).toEqual(['lease_expired', 'lease_expired']);
    expect((await tg.usage(id)).credits).toMatchObject({ held: 0 });
  });
});
