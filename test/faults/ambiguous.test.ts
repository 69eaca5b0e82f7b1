// Ambiguous outcome: a charge, a hold opening or a
// settlement whose reply is lost after the script ran (the connection cut by a proxy, or
// CLIENT KILL) reaches its caller as StoreUnavailableError; retried with the same operation id,
// Idempotency-Key or item id it is applied exactly once.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, fromIoredis, type ChargeOutcome, type Tollgate } from '../../src/index.ts';
import { StoreUnavailableError } from '../../src/errors.ts';
import { charge } from '../../src/scripts/bundle.generated.ts';
import { startRedisServer, type RedisServer } from '../helpers/redisServer.ts';
import { CLIENT_KINDS, ManualClock, accountId, type TestClient } from '../helpers/tollgate.ts';
import { startRedisProxy, type RedisProxy } from './proxy.ts';
import { connectClient, readJournal, untilAnswered, waitUntil } from './support.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

// Keeps the server busy for a while, so commands sent meanwhile are read in one batch.
const BUSY_SCRIPT = `local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
while true do
  local n = redis.call('TIME')
  if n[1] * 1000000 + n[2] - start > tonumber(ARGV[1]) then return 1 end
end`;

let server: RedisServer;
let admin: TestClient;
const clock = new ManualClock();
const prefix = 'ambiguous';

beforeAll(async () => {
  server = await startRedisServer();
  admin = await connectClient('node-redis', server.url);
});
afterAll(async () => {
  await admin?.close();
  await server?.stop();
});

const chargesOf = async (id: string, operationId: string) =>
  (await readJournal(admin.command, prefix, id)).filter((e) => e.kind === 'charge' && e.ref === operationId);
const movementsOf = async (id: string, holdId: string, kind: string) =>
  (await readJournal(admin.command, prefix, id)).filter((e) => e.kind === kind && e.ref === holdId);

async function account(tg: Tollgate): Promise<string> {
  const id = accountId('ambiguous');
  await tg.accounts.create(id, { plan: 'pro' });
  return id;
}

describe.each(CLIENT_KINDS)('a call whose reply is lost, through %s', (kind) => {
  let proxy: RedisProxy;
  let client: TestClient;
  let tg: Tollgate;
  beforeAll(async () => {
    proxy = await startRedisProxy(server.port);
    client = await connectClient(kind, proxy.url);
    tg = createTollgate({ plans: EXAMPLE_PLANS, redis: client.adapter, prefix, clock: clock.fn, timeoutMs: 1_000 });
  });
  afterAll(async () => {
    await client?.close();
    await proxy?.close();
  });

  it('the connection is cut after the script ran: the caller sees unavailable, the retry replays, charged once', async () => {
    const id = await account(tg);
    // The scripts are cached first, so the reply cut is the charge's own and not a NOSCRIPT.
    await tg.credits.charge(id, { required: 1 });
    const lost = proxy.dropReplyTo('req_7:item');
    const first = await tg.credits.charge(id, { required: 1, optional: 1, operationId: 'req_7:item' }).catch((e: unknown) => e);
    await lost;
    expect(first).toBeInstanceOf(StoreUnavailableError);
    // It did run: the journal has it, though no caller was told.
    expect(await chargesOf(id, 'req_7:item')).toHaveLength(1);

    const retried = await untilAnswered(() => tg.credits.charge(id, { required: 1, optional: 1, operationId: 'req_7:item' }));
    expect(retried.value).toEqual({ ok: true, charged: 2, balance: 4997, available: 4997, sources: [{ grantId: 'cycle:1', amount: 2 }], replayed: true });
    expect(await chargesOf(id, 'req_7:item')).toHaveLength(1);
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 4997, spent: 3 });
    expect((await tg.credits.reconcile(id)).matches).toBe(true);
  });

  it('a charge without an operation id whose reply is lost: the error carries the id the library made, and a retry with it replays', async () => {
    const id = await account(tg);
    await tg.credits.charge(id, { required: 1 });
    const lost = proxy.dropReplyTo(charge.fn);
    const first = await tg.credits.charge(id, { required: 2 }).catch((e: unknown) => e);
    await lost;
    expect(first).toBeInstanceOf(StoreUnavailableError);
    const operationId = (first as StoreUnavailableError).operationId!;
    expect(operationId).toMatch(/^op_[A-Za-z0-9_-]{16}$/);
    expect(await chargesOf(id, operationId)).toHaveLength(1);
    const retried = await untilAnswered(() => tg.credits.charge(id, { required: 2, operationId }));
    expect(retried.value).toEqual({ ok: true, charged: 2, balance: 4997, available: 4997, sources: [{ grantId: 'cycle:1', amount: 2 }], replayed: true });
    expect(await chargesOf(id, operationId)).toHaveLength(1);
  });

  it('many charges in flight when every connection is cut: each retried with its id lands exactly once', async () => {
    const id = await account(tg);
    const attempt = (i: number) => tg.credits.charge(id, { required: 1, optional: i % 3, operationId: `burst-${i}` });
    await tg.credits.charge(id, { required: 1, operationId: 'warm-up' });
    // The connection is cut as soon as the server answers anything after burst-30 was sent:
    // the charges sent with it ran, and their callers hear nothing.
    const cut = proxy.dropReplyTo('burst-30');
    const firstTry = Array.from({ length: 60 }, (_, i) =>
      attempt(i).then(
        (o) => ({ i, o }),
        () => ({ i, o: undefined as ChargeOutcome | undefined }),
      ),
    );
    await cut;
    const outcomes = await Promise.all(firstTry);
    const failed = outcomes.filter((x) => x.o === undefined).map((x) => x.i);
    const ranUnheard = (await readJournal(admin.command, prefix, id)).filter((e) => failed.some((i) => e.ref === `burst-${i}`));
    expect(ranUnheard.length, 'charges that ran while their callers heard nothing').toBeGreaterThan(0);
    const retried = await Promise.all(failed.map(async (i) => ({ i, o: (await untilAnswered(() => attempt(i))).value })));
    const told = new Map([...outcomes.filter((x) => x.o !== undefined), ...retried].map(({ i, o }) => [i, o!]));
    expect(told.size).toBe(60);

    const journal = (await readJournal(admin.command, prefix, id)).filter((e) => e.kind === 'charge');
    for (const [i, outcome] of told) {
      if (!outcome.ok) throw new Error(`burst-${i} was refused`);
      const entries = journal.filter((e) => e.ref === `burst-${i}`);
      expect(
        entries.map((e) => e.amount),
        `burst-${i}`,
      ).toEqual([outcome.charged]);
    }
    const spent = [...told.values()].reduce((sum, o) => sum + (o.ok ? o.charged : 0), 0);
    // A read right after the cut can be lost too (ioredis drops it unanswered; the timeout
    // turns that into unavailable): read as a caller would, until answered.
    expect((await untilAnswered(() => tg.usage(id))).value.credits).toMatchObject({ spent: spent + 1, balance: 5000 - spent - 1 });
    expect((await untilAnswered(() => tg.credits.reconcile(id))).value.matches).toBe(true);
  });

  it('a hold opening whose reply is lost, retried with the same Idempotency-Key, reserves once and answers with the hold', async () => {
    const id = await account(tg);
    await tg.credits.charge(id, { required: 1 });
    await tg.holds.open(id, { items: 1, perItem: { required: 1 } });
    const body = { items: 'lost-open' };
    const lost = proxy.dropReplyTo('lost-open-key');
    const first = await tg.holds
      .open(id, { items: 40, perItem: { required: 1, optional: 1 }, idempotency: { key: 'lost-open-key', body } })
      .catch((e: unknown) => e);
    await lost;
    expect(first).toBeInstanceOf(StoreUnavailableError);
    const retried = await untilAnswered(() =>
      tg.holds.open(id, { items: 40, perItem: { required: 1, optional: 1 }, idempotency: { key: 'lost-open-key', body } }),
    );
    expect(retried.value).toMatchObject({ ok: true, replayed: true, hold: { reserved: 80 } });
    if (!retried.value.ok) throw new Error(retried.value.reason);
    expect(await movementsOf(id, retried.value.hold.id, 'reserve')).toHaveLength(1);
    expect((await untilAnswered(() => tg.usage(id))).value.credits).toMatchObject({ held: 81, balance: 5000 - 1 - 81 });
  });

  it('a settlement whose reply is lost, retried with the same item id, spends once and answers as a replay', async () => {
    const id = await account(tg);
    const opened = await tg.holds.open(id, { items: 3, perItem: { required: 2, optional: 1 } });
    if (!opened.ok) throw new Error(opened.reason);
    const holdId = opened.hold.id;
    await tg.holds.settle(id, holdId, { itemId: 'warm-up' });
    const lost = proxy.dropReplyTo('lost-item-7');
    const first = await tg.holds.settle(id, holdId, { itemId: 'lost-item-7', optionalSpent: 1 }).catch((e: unknown) => e);
    await lost;
    expect(first).toBeInstanceOf(StoreUnavailableError);
    // It did run: the journal has its spend, though no caller was told.
    expect((await movementsOf(id, holdId, 'spend')).map((e) => e.amount)).toEqual([2, 3]);
    const retried = await untilAnswered(() => tg.holds.settle(id, holdId, { itemId: 'lost-item-7', optionalSpent: 1 }));
    expect(retried.value).toMatchObject({ ok: true, accepted: true, replayed: true, hold: { settled: 2, spent: 5, optionalSpent: 1 } });
    expect((await movementsOf(id, holdId, 'spend')).map((e) => e.amount)).toEqual([2, 3]);
    // The last item's reply lost too: the retry is a replay of the settlement that ended the hold.
    const end = proxy.dropReplyTo('lost-item-8');
    expect(await tg.holds.settle(id, holdId, { itemId: 'lost-item-8', failed: 'x' }).catch((e: unknown) => e)).toBeInstanceOf(StoreUnavailableError);
    await end;
    const last = await untilAnswered(() => tg.holds.settle(id, holdId, { itemId: 'lost-item-8', failed: 'x' }));
    expect(last.value).toMatchObject({ ok: true, accepted: true, replayed: true, hold: { status: 'completed', spent: 5, refunded: 4 } });
    expect(await movementsOf(id, holdId, 'refund')).toHaveLength(1);
    expect((await untilAnswered(() => tg.credits.reconcile(id))).value.matches).toBe(true);
  });

  it('CLIENT KILL right after the script ran: the retry with the same id replays, charged once', async () => {
    // Redis writes replies once it has processed what a read brought in: while a script keeps
    // it busy, the charge and the CLIENT KILL of its connection arrive together, the charge
    // runs, and its connection is closed before the reply goes out. The kill may win the
    // race and come first instead; each case must charge exactly once, and the test goes on
    // until it has seen the first.
    const direct = await connectClient(kind, server.url);
    const killer = await connectClient('node-redis', server.url);
    const gate = createTollgate({ plans: EXAMPLE_PLANS, redis: direct.adapter, prefix, clock: clock.fn, timeoutMs: 2_000 });
    try {
      const id = await account(gate);
      await gate.credits.charge(id, { required: 1 });
      let ranThenKilled = 0;
      for (let round = 0; round < 20 && ranThenKilled === 0; round++) {
        await waitUntil('the client to reconnect', async () => (await direct.command(['PING'])) === 'PONG');
        const clientId = String(await direct.command(['CLIENT', 'ID']));
        const operationId = `killed-${round}`;
        const busy = admin.command(['EVAL', BUSY_SCRIPT, '0', '150000']);
        await new Promise((resolve) => setTimeout(resolve, 20));
        const charge = gate.credits.charge(id, { required: 1, operationId }).catch((e: unknown) => e);
        await new Promise((resolve) => setTimeout(resolve, 20));
        const killed = killer.command(['CLIENT', 'KILL', 'ID', clientId]);
        await busy;
        await killed;
        const first = await charge;
        const ran = (await chargesOf(id, operationId)).length;
        if (first instanceof StoreUnavailableError && ran === 1) ranThenKilled++;
        const retried = await untilAnswered(() => gate.credits.charge(id, { required: 1, operationId }));
        expect(retried.value).toMatchObject({ ok: true, charged: 1 });
        expect(await chargesOf(id, operationId), operationId).toHaveLength(1);
      }
      expect(ranThenKilled, 'a charge that ran and then lost its connection').toBeGreaterThan(0);
      expect((await gate.credits.reconcile(id)).matches).toBe(true);
    } finally {
      await direct.close();
      await killer.close();
    }
  });
});

describe('ioredis with its default autoResendUnfulfilledCommands', () => {
  /** A tollgate on an ioredis client as it comes (it resends what was unanswered), behind a proxy. */
  async function resending(run: (tg: Tollgate, proxy: RedisProxy) => Promise<void>) {
    const proxy = await startRedisProxy(server.port);
    const client = new Redis(proxy.url, { maxRetriesPerRequest: 1, lazyConnect: true });
    client.on('error', () => {});
    await client.connect();
    try {
      await run(createTollgate({ plans: EXAMPLE_PLANS, redis: fromIoredis(client), prefix, clock: clock.fn, timeoutMs: 2_000 }), proxy);
    } finally {
      client.disconnect();
      await proxy.close();
    }
  }

  it('resends a charge whose reply was lost by itself: the operation id makes that resend a replay', () =>
    resending(async (tg, proxy) => {
      const id = await account(tg);
      const lost = proxy.dropReplyTo('resent-op');
      const outcome = await tg.credits.charge(id, { required: 3, operationId: 'resent-op' });
      await lost;
      // The caller never saw the failure: the client's resend answered, as a replay.
      expect(outcome).toEqual({ ok: true, charged: 3, balance: 4997, available: 4997, sources: [{ grantId: 'cycle:1', amount: 3 }], replayed: true });
      expect(await chargesOf(id, 'resent-op')).toHaveLength(1);
    }));

  it('resends a charge without an operation id by itself: the id the library made up makes it charge once', () =>
    resending(async (tg, proxy) => {
      const id = await account(tg);
      await tg.credits.charge(id, { required: 1 });
      // The made-up id is in the command: cut the reply to the next charge script sent.
      const before = proxy.sent.length;
      const lost = proxy.dropReplyTo(charge.fn);
      const outcome = await tg.credits.charge(id, { required: 3 });
      await lost;
      expect(
        proxy.sent.slice(before).filter((chunk) => chunk.includes(charge.fn)),
        'the command and its resend',
      ).toHaveLength(2);
      expect(outcome).toEqual({ ok: true, charged: 3, balance: 4996, available: 4996, sources: [{ grantId: 'cycle:1', amount: 3 }], replayed: false });
      expect((await tg.usage(id)).credits).toMatchObject({ balance: 4996, spent: 4 });
    }));

  it('resends a settlement whose reply was lost by itself: the item id makes that resend a replay', () =>
    resending(async (tg, proxy) => {
      const id = await account(tg);
      const opened = await tg.holds.open(id, { items: 4, perItem: { required: 1 } });
      if (!opened.ok) throw new Error(opened.reason);
      const lost = proxy.dropReplyTo('resent-item');
      const outcome = await tg.holds.settle(id, opened.hold.id, { itemId: 'resent-item' });
      await lost;
      expect(outcome).toMatchObject({ ok: true, accepted: true, replayed: true, hold: { settled: 1, spent: 1 } });
      expect(await movementsOf(id, opened.hold.id, 'spend')).toHaveLength(1);
      expect((await tg.usage(id)).credits).toMatchObject({ spent: 1, held: 3 });
    }));
});

// Charges without an operation id under a client that resends by itself (ioredis defaults):
// the library gives each charge an id of its own, kept in the subject's operations hash
// (docs/reliability.md#operation-ids), so however many of one account's charges are in flight
// when a connection drops, each is applied once, and a caller that saw StoreUnavailableError
// retries with the id it carries.
const IN_FLIGHT = 64;
const WAVES = 8;

describe('64 charges of one account in flight while connections drop, on ioredis defaults', () => {
  it("nothing is applied twice: every charge lands once, and a retry with the error's id replays it", async () => {
    const prefix = 'storm';
    // Replies wait 20 ms in the proxy: the server has run the charges when the cut comes.
    const proxy = await startRedisProxy(server.port, { replyDelayMs: 20 });
    const client = new Redis(proxy.url);
    client.on('error', () => {});
    const clock = new ManualClock();
    const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: fromIoredis(client), prefix, clock: clock.fn, timeoutMs: 5_000 });
    const id = accountId('storm');
    await tg.accounts.create(id, { plan: 'business' });
    const outcomes: ChargeOutcome[] = [];
    const failed: StoreUnavailableError[] = [];
    for (let wave = 0; wave < WAVES; wave++) {
      const charges = Array.from({ length: IN_FLIGHT }, () => tg.credits.charge(id, { required: 1 }));
      // The 64 have reached the server and run; their replies wait in the proxy: cut, and in
      // every other wave cut the resends too.
      await sleep(10);
      proxy.cutAll();
      if (wave % 2 === 1) setTimeout(() => proxy.cutAll(), 80);
      for (const result of await Promise.allSettled(charges)) {
        if (result.status === 'fulfilled') outcomes.push(result.value);
        else if (result.reason instanceof StoreUnavailableError) failed.push(result.reason);
        else throw result.reason;
      }
    }
    // The cuts did land with charges in flight: ioredis sent more charge commands than were asked for.
    const sentCharges = proxy.sent.join('').split(/\$5\r\nFCALL\r\n|\$7\r\nEVALSHA\r\n/).length - 1;
    expect(sentCharges).toBeGreaterThan(WAVES * IN_FLIGHT);
    // Each failure carries its charge's id; retried with it, the charge applies at most once.
    for (const error of failed) {
      expect(error.operationId).toMatch(/^op_/);
      const retried = await tg.credits.charge(id, { required: 1, operationId: error.operationId! });
      expect(retried.ok).toBe(true);
      outcomes.push(retried);
    }
    client.disconnect();
    await proxy.close();

    const journal = (await readJournal(admin.command, prefix, id)).filter((e) => e.kind === 'charge');
    const refs = journal.map((e) => e.ref);
    // Every charge asked for landed exactly once: one journal entry per charge, no id twice.
    expect(new Set(refs).size).toBe(refs.length);
    expect(refs).toHaveLength(WAVES * IN_FLIGHT);
    const checked = createTollgate({ plans: EXAMPLE_PLANS, redis: fromIoredis(new Redis(server.url)), prefix, clock: clock.fn });
    expect((await checked.usage(id)).credits).toMatchObject({ spent: WAVES * IN_FLIGHT });
    expect((await checked.credits.reconcile(id)).matches).toBe(true);
  }, 60_000);
});
