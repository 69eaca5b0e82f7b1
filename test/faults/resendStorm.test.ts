// Charges without an operation id under a client that resends by itself (ioredis defaults):
// the library gives each charge an id of its own, kept in the subject's operations hash
// (docs/reliability.md), so however many of one account's charges are in flight when a
// connection drops, each is applied once, and a caller that saw StoreUnavailableError retries
// with the id it carries and is answered with the first outcome.
import { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError, createTollgate, fromIoredis, type ChargeOutcome } from '../../src/index.ts';
import { startRedisServer, type RedisServer } from '../helpers/redisServer.ts';
import { ManualClock, accountId, type TestClient } from '../helpers/tollgate.ts';
import { startRedisProxy } from './proxy.ts';
import { connectClient, readJournal } from './support.ts';

const IN_FLIGHT = 64;
const WAVES = 8;

let server: RedisServer;
let admin: TestClient;

beforeAll(async () => {
  server = await startRedisServer();
  admin = await connectClient('node-redis', server.url);
});
afterAll(async () => {
  await admin?.close();
  await server?.stop();
});

describe('64 charges of one account in flight while connections drop, on ioredis defaults', () => {
  it('nothing is applied twice: every charge lands once, and a retry with the error\'s id replays it', async () => {
    const prefix = 'storm';
    // Replies wait 20 ms in the proxy: the server has run the charges when the cut comes.
    const proxy = await startRedisProxy(server.port, { replyDelayMs: 20 });
    const client = new Redis(proxy.url);
    client.on('error', () => {});
    const clock = new ManualClock();
    const tg = createTollgate({ redis: fromIoredis(client), prefix, clock: clock.fn, timeoutMs: 5_000 });
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
    const checked = createTollgate({ redis: fromIoredis(new Redis(server.url)), prefix, clock: clock.fn });
    expect((await checked.usage(id)).credits).toMatchObject({ spent: WAVES * IN_FLIGHT });
    expect((await checked.credits.reconcile(id)).matches).toBe(true);
  }, 60_000);
});
