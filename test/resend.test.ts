// A command may reach Redis twice: a caller retries after a timeout, or the client resends it
// after a reconnect (ioredis does so by default). Every credit movement must still apply
// once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, fromNodeRedis, type RedisScriptClient, type Tollgate } from '../src/index.ts';
import { charge } from '../src/scripts/bundle.generated.ts';
import { Code } from '../src/scripts/codes.ts';
import { connectNodeRedis, uniquePrefix } from './helpers/redis.ts';
import { ManualClock, accountId } from './helpers/tollgate.ts';

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
  beforeAll(async () => {
    client = await connectNodeRedis();
    const clock = new ManualClock();
    tg = createTollgate({ redis: resendingClient(fromNodeRedis(client)), prefix, clock: clock.fn });
    plain = createTollgate({ redis: fromNodeRedis(client), prefix, clock: clock.fn });
    recorded = createTollgate({ redis: recordingClient(fromNodeRedis(client), sent), prefix, clock: clock.fn });
  });
  afterAll(() => client.close());
  const accountKey = (id: string) => `${prefix}:{${id}}:a`;
  // The charge's words as sent, by FCALL (or EVALSHA where functions were refused).
  const chargeWords = () => sent.filter((words) => words[1] === charge.fn || words[1] === charge.sha1);

  it('a charge without an operation id is charged once, and reported as a plain charge', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'free' });
    expect(await tg.credits.charge(id, { required: 2, optional: 1 })).toEqual({ ok: true, charged: 3, balance: 27, replayed: false });
    expect((await plain.usage(id)).credits).toMatchObject({ balance: 27, spent: 3 });
  });

  it('the exact same words of a charge without an id, sent again, are a replay that charges nothing', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'free' });
    sent.length = 0;
    expect(await recorded.credits.charge(id, { required: 4 })).toMatchObject({ ok: true, charged: 4, balance: 26 });
    const [words] = chargeWords();
    // The library named the charge itself: 12 hex digits among its arguments.
    expect(words!.some((word) => /^[0-9a-f]{12}$/.test(word))).toBe(true);
    expect(await client.sendCommand(words!)).toEqual([Code.REPLAYED, 4, 26, 4]);
    expect((await plain.usage(id)).credits).toMatchObject({ balance: 26, spent: 4 });
    // Each charge gets an id of its own: the same request made again is a new charge.
    expect(await recorded.credits.charge(id, { required: 4 })).toMatchObject({ ok: true, balance: 22 });
  });

  it('the ids kept for that stay few: the recent-charges field stays under 130 characters after 1,000 charges, and the latest still replay', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'business' });
    sent.length = 0;
    for (let i = 0; i < 1000; i++) await recorded.credits.charge(id, { required: 1 + (i % 3) });
    const recent = String(await client.hGet(accountKey(id), 'rc'));
    expect(recent.length).toBeGreaterThan(0);
    expect(recent.length).toBeLessThanOrEqual(130);
    const spent = (await plain.usage(id)).credits.spent;
    for (const words of chargeWords().slice(-5)) expect(((await client.sendCommand(words)) as unknown[])[0]).toBe(Code.REPLAYED);
    expect((await plain.usage(id)).credits.spent).toBe(spent);
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
    expect(await tg.holds.settle(id, hold.hold.id, { itemId: 'i1', optionalSpent: 1 })).toMatchObject({ accepted: true, hold: { delivered: 1, spent: 2 } });
    expect(await tg.holds.settle(id, hold.hold.id, { itemId: 'i2', failed: 'x' })).toMatchObject({ accepted: true, hold: { failed: { x: 1 }, settled: 2 } });
    expect(await tg.holds.spend(id, budget.hold.id, { itemId: 'p1', amount: 2 })).toMatchObject({ accepted: true, hold: { spent: 2, settled: 1 } });
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
  it('the charge carries no library-made id and leaves no recent-charges field', async () => {
    const client = await connectNodeRedis();
    try {
      const prefix = uniquePrefix('noids');
      const sent: string[][] = [];
      const tg = createTollgate({ redis: recordingClient(fromNodeRedis(client), sent), prefix, clock: new ManualClock().fn, resendIds: false });
      const id = accountId();
      await tg.accounts.create(id, { plan: 'pro' });
      await tg.credits.charge(id, { required: 1 });
      await tg.credits.charge(id, { required: 2, operationId: 'mine' });
      const words = sent.filter((w) => w[1] === charge.fn || w[1] === charge.sha1);
      expect(words[0]!.some((word) => /^[0-9a-f]{12}$/.test(word))).toBe(false);
      expect(Number(await client.hExists(`${prefix}:{${id}}:a`, 'rc'))).toBe(0);
      expect((await client.keys(`${prefix}:*op:*`)).map((k) => k.slice(k.indexOf('}:') + 2))).toEqual(['op:mine']);
      expect((await tg.usage(id)).credits).toMatchObject({ spent: 3 });
    } finally {
      await client.close();
    }
  });
});
