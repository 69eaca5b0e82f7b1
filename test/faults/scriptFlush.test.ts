// Script cache and function library loss (issue "Scale-out and faults"): SCRIPT FLUSH or
// FUNCTION FLUSH in the middle of a load run is invisible to callers. Every call still answers
// (an FCALL meets "Function not found", the runner loads the library and sends it again; an
// EVALSHA meets NOSCRIPT, the runner sends the source once), and the balances are exactly what
// the callers were told.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, type Hold, type RedisScriptClient, type Tollgate } from '../../src/index.ts';
import { startRedisServer, type RedisServer } from '../helpers/redisServer.ts';
import { CLIENT_KINDS, ManualClock, accountId, type TestClient } from '../helpers/tollgate.ts';
import { auditWorkload, Workload } from './load.ts';
import { connectClient, expectSound, readJournal, type JournalEntry } from './support.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

const FLUSHES = 6;

/** Counts the calls that had to send the script again: EVAL after NOSCRIPT, or a library load. */
function counting(inner: RedisScriptClient, counter: { resent: number }): RedisScriptClient {
  return {
    ...inner,
    send(words) {
      if (words[0] === 'EVAL') counter.resent++;
      return inner.send(words);
    },
    load(library, routingKey) {
      counter.resent++;
      return inner.load!(library, routingKey);
    },
  };
}

const CASES = [
  { label: 'SCRIPT FLUSH, scripts by EVALSHA', flushes: ['SCRIPT'], scripts: 'eval' },
  { label: 'FUNCTION FLUSH, scripts as functions', flushes: ['FUNCTION'], scripts: 'functions' },
  { label: 'FUNCTION FLUSH and SCRIPT FLUSH in turn, scripts as functions', flushes: ['FUNCTION', 'SCRIPT'], scripts: 'functions' },
] as const;

describe.each(CASES)('$label under load', ({ flushes, scripts }) => {
  let server: RedisServer;
  let clients: TestClient[];
  let gates: Tollgate[];
  const clock = new ManualClock();
  const prefix = 'flush';
  const counter = { resent: 0 };

  beforeAll(async () => {
    // A server of its own: other test files must not see their script cache flushed.
    server = await startRedisServer();
    clients = await Promise.all(CLIENT_KINDS.map((kind) => connectClient(kind, server.url)));
    gates = clients.map((client) => createTollgate({ plans: EXAMPLE_PLANS, redis: counting(client.adapter, counter), prefix, clock: clock.fn, scripts }));
  });
  afterAll(async () => {
    await Promise.all((clients ?? []).map((client) => client.close()));
    await server?.stop();
  });

  it('is invisible to callers: no call fails, and every balance is exactly what they were told', async () => {
    const accounts = Array.from({ length: 4 }, () => accountId('flush'));
    for (const id of accounts) await gates[0]!.accounts.create(id, { plan: 'business' });
    const load = new Workload({ gates, accounts, chargeWorkers: 6, holdWorkers: 4 });
    load.start();
    for (let flush = 0; flush < FLUSHES; flush++) {
      await load.progress(150);
      const resentBefore = counter.resent;
      const what = flushes[flush % flushes.length]!;
      expect(await clients[flush % clients.length]!.command([what, 'FLUSH', flush % 4 < 2 ? 'SYNC' : 'ASYNC'])).toBe('OK');
      await load.progress(50);
      // A SCRIPT FLUSH costs FCALLs nothing: only the flush of what the calls use is seen.
      if (what === 'FUNCTION' || scripts === 'eval') expect(counter.resent, `flush ${flush} made callers send the scripts again`).toBeGreaterThan(resentBefore);
    }
    await load.progress(150);
    await load.stop();

    expect(load.errors).toEqual([]);
    // Invisible: not one StoreUnavailableError, so nothing was retried and nothing is in doubt.
    expect(load.figures.unavailable).toBe(0);
    expect(load.ledger.retries).toBe(0);

    const journals = new Map<string, JournalEntry[]>();
    const holds = new Map<string, Hold>();
    let charged = 0;
    for (const id of accounts) {
      journals.set(id, await readJournal(clients[1]!.command, prefix, id));
      const stored = await expectSound(gates[0]!, id);
      for (const hold of stored.holds) holds.set(`${id}/${hold.id}`, hold);
      charged += stored.credits.spent - stored.holds.reduce((sum, hold) => sum + hold.spent, 0);
    }
    const audit = auditWorkload(load, journals, holds);
    expect(audit.details).toEqual([]);
    expect(audit).toMatchObject({ lost: 0, doubled: 0, unacknowledged: 0, unacknowledgedHolds: 0 });
    expect(load.figures.settlementsAppliedDespiteError).toBe(0);
    // Exact: what the accounts spent on charges is what callers were told they were charged,
    // and each hold spent what its worker was told.
    expect(charged).toBe([...load.ledger.acknowledged.values()].reduce((sum, n) => sum + n, 0));
    for (const tally of load.holds.values()) expect(holds.get(`${tally.accountId}/${tally.holdId}`)!.spent, tally.holdId).toBe(tally.ackedSpend);
    if (process.env.TOLLGATE_FAULT_STATS) console.log({ flushes: FLUSHES, resent: counter.resent, ...load.figures, ...audit });
  }, 60_000);
});
