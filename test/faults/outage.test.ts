// Outage (docs/errors.md): with Redis unreachable, or slower than the
// configured timeout, charged operations fail closed with the typed StoreUnavailableError
// (code 'unavailable') within about the timeout; when Redis is back, the same tollgate serves
// again, with no restart and no new client.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, isTollgateError, type Tollgate } from '../../src/index.ts';
import { StoreUnavailableError } from '../../src/errors.ts';
import { startRedisServer, type RedisServer } from '../helpers/redisServer.ts';
import { CLIENT_KINDS, ManualClock, accountId, type TestClient } from '../helpers/tollgate.ts';
import { connectClient, readJournal, serverPid, waitUntil } from './support.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

const TIMEOUT_MS = 300;
// What a loaded CI machine may add to the timeout before the error reaches the caller.
const SLACK_MS = 700;

/** The charged operations of the library, each a fresh call on one account. */
function chargedCalls(tg: Tollgate, id: string, holdId: string, tag: string): Record<string, () => Promise<unknown>> {
  return {
    'admit with a credit pre-check': () => tg.limits.admit(id, { credits: 1 }),
    'charge with an operation id': () => tg.credits.charge(id, { required: 1, operationId: `${tag}:op` }),
    'charge without one': () => tg.credits.charge(id, { required: 2 }),
    'hold opening': () => tg.holds.open(id, { items: 5, perItem: { required: 1 }, idempotency: { key: `${tag}:key`, body: { v: 1 } } }),
    settlement: () => tg.holds.settle(id, holdId, { itemId: `${tag}:item` }),
    'budget opening': () => tg.holds.openBudget(id, { amount: 3 }),
  };
}

/** Runs every call and returns, per call, the error and how long it took to come. */
async function failures(calls: Record<string, () => Promise<unknown>>): Promise<Array<{ name: string; error: unknown; ms: number }>> {
  return Promise.all(
    Object.entries(calls).map(async ([name, call]) => {
      const started = performance.now();
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      return { name, error, ms: performance.now() - started };
    }),
  );
}

function expectUnavailable(results: Array<{ name: string; error: unknown; ms: number }>) {
  for (const { name, error, ms } of results) {
    expect(error, name).toBeInstanceOf(StoreUnavailableError);
    expect(isTollgateError(error, 'unavailable'), name).toBe(true);
    expect(error, name).toMatchObject({ name: 'StoreUnavailableError', code: 'unavailable' });
    expect(ms, `${name} failed within about the timeout`).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  }
}

describe.each(CLIENT_KINDS)('quota store outage through %s', (kind) => {
  let server: RedisServer;
  let client: TestClient;
  let tg: Tollgate;
  const clock = new ManualClock();
  const prefix = 'outage';

  beforeAll(async () => {
    server = await startRedisServer({ appendOnly: true });
    // As tollgate's policy needs (see connectClient): no offline queue, so nothing issued
    // during an outage runs later behind its caller's back.
    client = await connectClient(kind, server.url, { offlineQueue: false });
    tg = createTollgate({ plans: EXAMPLE_PLANS, redis: client.adapter, prefix, clock: clock.fn, timeoutMs: TIMEOUT_MS });
  });
  afterAll(async () => {
    await client?.close();
    await server?.stop();
  });

  async function account(): Promise<{ id: string; holdId: string }> {
    const id = accountId('outage');
    await tg.accounts.create(id, { plan: 'pro' });
    const hold = await tg.holds.open(id, { items: 10, perItem: { required: 1 } });
    if (!hold.ok) throw new Error(hold.reason);
    return { id, holdId: hold.hold.id };
  }

  const serves = (id: string) => async () => (await tg.credits.charge(id, { required: 1 })).ok;

  it('unreachable: every charged call fails closed at once, nothing is charged, and service resumes by itself', async () => {
    const { id, holdId } = await account();
    const before = await tg.accounts.inspect(id);
    const journalBefore = await readJournal(client.command, prefix, id);

    await server.kill('SIGTERM');
    expectUnavailable(await failures(chargedCalls(tg, id, holdId, 'down-1')));
    // Still down a moment later (the client is retrying its connection): still closed.
    await sleep(100);
    expectUnavailable(await failures(chargedCalls(tg, id, holdId, 'down-2')));

    await server.restart();
    await waitUntil('the same tollgate to serve again', serves(id));

    // Nothing issued during the outage ran afterwards: only the charge that proved recovery.
    const after = await tg.accounts.inspect(id);
    expect(after.credits).toEqual({
      ...before.credits,
      balance: before.credits.balance - 1,
      spent: before.credits.spent + 1,
      available: before.credits.available - 1,
    });
    expect(after.holds).toEqual(before.holds);
    expect(after.windows).toEqual(before.windows);
    expect(await readJournal(client.command, prefix, id)).toHaveLength(journalBefore.length + 1);
    expect((await tg.credits.reconcile(id)).matches).toBe(true);
  });

  it('slower than the timeout (process paused): calls fail closed within about the timeout; retried with the same ids they apply once', async () => {
    const { id, holdId } = await account();
    const before = await tg.accounts.inspect(id);
    const pid = await serverPid(server.port);

    process.kill(pid, 'SIGSTOP');
    let results;
    try {
      results = await failures(chargedCalls(tg, id, holdId, 'slow'));
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    expectUnavailable(results);
    for (const { ms } of results) expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);

    // The paused server had the calls in its socket: it runs them now that it resumes. That is
    // why a charge carries an operation id: the caller's retry is answered as a replay.
    await waitUntil('the same tollgate to serve again', async () => (await tg.usage(id)).credits.allowance > 0);
    const retried = await tg.credits.charge(id, { required: 1, operationId: 'slow:op' });
    expect(retried).toMatchObject({ ok: true, charged: 1, replayed: true });
    // Likewise the opening under its Idempotency-Key, and the settlement under its item id.
    expect(await tg.holds.open(id, { items: 5, perItem: { required: 1 }, idempotency: { key: 'slow:key', body: { v: 1 } } })).toMatchObject({
      ok: true,
      replayed: true,
    });
    expect(await tg.holds.settle(id, holdId, { itemId: 'slow:item' })).toMatchObject({
      ok: true,
      accepted: true,
      replayed: true,
      hold: { settled: 1, spent: 1 },
    });
    const journal = await readJournal(client.command, prefix, id);
    expect(journal.filter((e) => e.kind === 'charge' && e.ref === 'slow:op')).toHaveLength(1);
    const after = await tg.accounts.inspect(id);
    // Each call ran once: charges of 1 and 2, one settlement, a hold of 5 and a budget of 3.
    expect(after.holds).toHaveLength(before.holds.length + 2);
    expect(before.credits.balance - after.credits.balance).toBe(1 + 2 + 5 + 3);
    expect(after.credits.spent - before.credits.spent).toBe(1 + 2 + 1);
    expect((await tg.credits.reconcile(id)).matches).toBe(true);
  });
});
