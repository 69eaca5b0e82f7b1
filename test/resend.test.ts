// A command may reach Redis twice: a caller retries after a timeout, or the client resends it
// after a reconnect (ioredis does so by default). Every credit movement must still apply
// once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, fromNodeRedis, type RedisScriptClient, type Tollgate } from '../src/index.ts';
import { charge } from '../src/scripts/bundle.generated.ts';
import { Code } from '../src/scripts/codes.ts';
import { connectNodeRedis, uniquePrefix } from './helpers/redis.ts';
import { ManualClock, accountId } from './helpers/tollgate.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';

/** An operation id the library made (src/credits.ts newOperationId). */
const LIBRARY_ID = /^op_[A-Za-z0-9_-]{16}$/;

/** Sends every command twice, as a client resending an unanswered command would. */
function resendingClient(inner: RedisScriptClient): RedisScriptClient {
  return {
    ...inner,
    async send(words) {
      await inner.send(words);
      return inner.send(words);
    },
  };
}

/** Keeps the words of every command sent. */
function recordingClient(inner: RedisScriptClient, sent: string[][]): RedisScriptClient {
  return { ...inner, send: (words) => (sent.push(words), inner.send(words)) };
}

describe('a command that reaches Redis twice applies once', () => {
  let client: Awaited<ReturnType<typeof connectNodeRedis>>;
  let tg: Tollgate;
  let plain: Tollgate;
  let recorded: Tollgate;
  const sent: string[][] = [];
  const prefix = uniquePrefix('resend');
  const clock = new ManualClock();
  beforeAll(async () => {
    client = await connectNodeRedis();
    tg = createTollgate({ plans: EXAMPLE_PLANS, redis: resendingClient(fromNodeRedis(client)), prefix, clock: clock.fn });
    plain = createTollgate({ plans: EXAMPLE_PLANS, redis: fromNodeRedis(client), prefix, clock: clock.fn });
    recorded = createTollgate({ plans: EXAMPLE_PLANS, redis: recordingClient(fromNodeRedis(client), sent), prefix, clock: clock.fn });
  });
  afterAll(() => client.close());
  const operationsKey = (id: string) => `${prefix}:{${id}}:op`;
  // The charge's words as sent, by FCALL (or EVALSHA where functions were refused).
  const chargeWords = () => sent.filter((words) => words[1] === charge.fn || words[1] === charge.sha1);

  it('a charge without an operation id is charged once, and reported as a plain charge', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'free' });
    expect(await tg.credits.charge(id, { required: 2, optional: 1 })).toEqual({
      ok: true,
      charged: 3,
      balance: 27,
      available: 27,
      sources: [{ grantId: 'cycle:1', amount: 3 }],
      replayed: false,
    });
    expect((await plain.usage(id)).credits).toMatchObject({ balance: 27, spent: 3 });
  });

  it('the exact same words of a charge without an id, sent again, are a replay that charges nothing', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'free' });
    sent.length = 0;
    expect(await recorded.credits.charge(id, { required: 4 })).toMatchObject({ ok: true, charged: 4, balance: 26 });
    const [words] = chargeWords();
    // The library named the charge itself: an operation id of its own among the arguments.
    expect(words!.some((word) => LIBRARY_ID.test(word))).toBe(true);
    // code, charged, balance, needed, available, then the drawn list: cycle 1 gave 4 (no event written: no counts).
    expect(await client.sendCommand(words!)).toEqual([Code.REPLAYED, 4, 26, 4, 26, 'c1=4']);
    expect((await plain.usage(id)).credits).toMatchObject({ balance: 26, spent: 4 });
    // Each charge gets an id of its own: the same request made again is a new charge.
    expect(await recorded.credits.charge(id, { required: 4 })).toMatchObject({ ok: true, balance: 22 });
  });

  it("the library's ids stay bounded: one charge a second for 1,000 s keeps at most its last 4 minutes of ids, and the latest still replay", async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'business' });
    sent.length = 0;
    for (let i = 0; i < 1000; i++) {
      await recorded.credits.charge(id, { required: 1 + (i % 3) });
      clock.advance(1000);
    }
    // Library-made ids are kept 2 minutes, dropped a few at each 32nd charge: at most about 240 stay.
    const kept = Number(await client.hLen(operationsKey(id)));
    expect(kept).toBeGreaterThan(100);
    expect(kept).toBeLessThanOrEqual(241);
    const spent = (await plain.usage(id)).credits.spent;
    for (const words of chargeWords().slice(-5)) expect(((await client.sendCommand(words)) as unknown[])[0]).toBe(Code.REPLAYED);
    expect((await plain.usage(id)).credits.spent).toBe(spent);
  });

  it('a charge sent again a minute later still applies once: an id is kept at least 60 s however many charges follow', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'business' });
    sent.length = 0;
    await recorded.credits.charge(id, { required: 1 });
    const [first] = chargeWords();
    // 1,500 more charges in the same minute: more than the 1,000 ids a subject keeps.
    for (let i = 0; i < 1500; i++) await plain.credits.charge(id, { required: 1, operationId: `burst-${i}` });
    clock.advance(59_000);
    await plain.credits.charge(id, { required: 1, operationId: 'late' });
    const spent = (await plain.usage(id)).credits.spent;
    expect(((await client.sendCommand(first!)) as unknown[])[0]).toBe(Code.REPLAYED);
    expect((await plain.usage(id)).credits.spent).toBe(spent);
    // Past the floor, a subject holding more than 1,000 ids drops those older than 60 s, a few
    // at each charge, until a pass over the hash is done.
    clock.advance(61_000);
    let charges = 0;
    while (Number(await client.hLen(operationsKey(id))) > 1_001 && charges < 2_000) {
      await plain.credits.charge(id, { required: 1, operationId: `later-${charges++}` });
    }
    // Each step looks at about 64 ids, every 32nd charge: one pass over 1,500 ids takes about 750.
    expect(charges).toBeLessThan(1_500);
  });

  it('opening a hold without a key, resent, returns the hold it opened and reserves once', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'pro' });
    const opened = await tg.holds.open(id, { items: 50, perItem: { required: 1, optional: 1 } });
    expect(opened).toMatchObject({ ok: true, replayed: false, hold: { reserved: 100 } });
    const budget = await tg.holds.openBudget(id, { amount: 5 });
    expect(budget).toMatchObject({ ok: true, replayed: false, hold: { reserved: 5 } });
    expect((await plain.usage(id)).credits).toMatchObject({ balance: 4895, held: 105 });
    expect((await plain.holds.list(id)).total).toBe(2);
  });

  it('a settlement or a spend, resent, counts once: its item id makes the second a replay', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'pro' });
    const hold = await plain.holds.open(id, { items: 3, perItem: { required: 1, optional: 1 } });
    const budget = await plain.holds.openBudget(id, { amount: 5 });
    if (!hold.ok || !budget.ok) throw new Error('open refused');
    expect(await tg.holds.settle(id, hold.hold.id, { itemId: 'i1', optionalSpent: 1 })).toMatchObject({
      ok: true,
      accepted: true,
      hold: { delivered: 1, spent: 2 },
    });
    expect(await tg.holds.settle(id, hold.hold.id, { itemId: 'i2', failed: 'x' })).toMatchObject({
      ok: true,
      accepted: true,
      hold: { failed: { x: 1 }, settled: 2 },
    });
    expect(await tg.holds.spend(id, budget.hold.id, { itemId: 'p1', amount: 2 })).toMatchObject({ ok: true, accepted: true, hold: { spent: 2, settled: 1 } });
    expect((await plain.usage(id)).credits).toMatchObject({ spent: 4, held: 4 + 3 });
  });

  it('a cancel resent refunds once', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'pro' });
    const hold = await plain.holds.open(id, { items: 8, perItem: { required: 1 } });
    if (!hold.ok) throw new Error(hold.reason);
    expect((await tg.holds.cancel(id, hold.hold.id)).hold).toMatchObject({ status: 'canceled', refunded: 8 });
    expect((await plain.usage(id)).credits).toMatchObject({ balance: 5000, held: 0 });
  });
});

describe('resendIds: false sends no id for charges the caller named none', () => {
  it('the charge carries no library-made id and leaves no record of it', async () => {
    const client = await connectNodeRedis();
    try {
      const prefix = uniquePrefix('noids');
      const sent: string[][] = [];
      const tg = createTollgate({
        plans: EXAMPLE_PLANS,
        redis: recordingClient(fromNodeRedis(client), sent),
        prefix,
        clock: new ManualClock().fn,
        resendIds: false,
      });
      const id = accountId();
      await tg.accounts.create(id, { plan: 'pro' });
      await tg.credits.charge(id, { required: 1 });
      await tg.credits.charge(id, { required: 2, operationId: 'mine' });
      const words = sent.filter((w) => w[1] === charge.fn || w[1] === charge.sha1);
      expect(words[0]!.some((word) => LIBRARY_ID.test(word))).toBe(false);
      expect((await client.hKeys(`${prefix}:{${id}}:op`)).sort()).toEqual(['^', 'omine']);
      expect((await tg.usage(id)).credits).toMatchObject({ spent: 3 });
    } finally {
      await client.close();
    }
  });
});
