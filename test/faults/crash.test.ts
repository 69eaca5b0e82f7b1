// Crash (issue "Scale-out and faults"): under a steady load of charges and hold settlements,
// the redis-server (appendonly yes, appendfsync always) is killed with SIGKILL and restarted
// on the same port and directory. Afterwards every charge and settlement acknowledged to a
// caller is in the balances, the holds and the journal, none is applied twice (callers retry
// with their operation ids, Idempotency-Keys and item ids), the journal reconciles, and both
// clients reconnected by themselves.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, type Hold, type Tollgate } from '../../src/index.ts';
import { startRedisServer, type RedisServer } from '../helpers/redisServer.ts';
import { CLIENT_KINDS, ManualClock, accountId, type TestClient } from '../helpers/tollgate.ts';
import { auditWorkload, Workload } from './load.ts';
import { connectClient, expectSound, readJournal, type JournalEntry } from './support.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

const CRASHES = 2;

describe('SIGKILL of an appendfsync-always Redis under load', () => {
  let server: RedisServer;
  let clients: TestClient[];
  let gates: Tollgate[];
  const clock = new ManualClock();
  const prefix = 'crash';

  beforeAll(async () => {
    server = await startRedisServer({ appendOnly: true });
    // Offline queues on (the clients' default): calls made while Redis restarts wait for it.
    clients = await Promise.all(CLIENT_KINDS.map((kind) => connectClient(kind, server.url)));
    // A short timeout, so callers notice the crash quickly and retry.
    gates = clients.map((client) => createTollgate({ plans: EXAMPLE_PLANS, redis: client.adapter, prefix, clock: clock.fn, timeoutMs: 300 }));
  });
  afterAll(async () => {
    await Promise.all((clients ?? []).map((client) => client.close().catch(() => {})));
    await server?.stop();
  });

  it('loses no acknowledged charge or settlement, applies none twice, the journals reconcile, and the clients come back by themselves', async () => {
    const accounts = Array.from({ length: 6 }, () => accountId('crash'));
    for (const id of accounts) await gates[0]!.accounts.create(id, { plan: 'business' });

    const load = new Workload({ gates, accounts, chargeWorkers: 6, holdWorkers: 4 });
    load.start();
    const acknowledgedBefore: number[] = [];
    for (let crash = 0; crash < CRASHES; crash++) {
      await load.progress(300);
      await server.kill('SIGKILL');
      acknowledgedBefore.push(load.ledger.acknowledged.size);
      await server.restart();
    }
    await load.progress(300);
    await load.stop();
    expect(load.errors).toEqual([]);

    // Both clients, unchanged, answered after the last restart.
    for (const client of clients) expect(await client.command(['PING'])).toBe('PONG');
    expect(load.ledger.acknowledged.size).toBeGreaterThan(acknowledgedBefore.at(-1)! + 100);
    expect(load.figures.unavailable, 'the crashes were seen by callers').toBeGreaterThan(0);

    const journals = new Map<string, JournalEntry[]>();
    const holds = new Map<string, Hold>();
    for (const id of accounts) {
      journals.set(id, await readJournal((args) => clients[0]!.command(args), prefix, id));
      const stored = await expectSound(gates[1]!, id);
      for (const hold of stored.holds) holds.set(`${id}/${hold.id}`, hold);
      // Every hold ended (the load cancels what it holds when it stops): nothing stays held.
      expect(stored.credits.held, id).toBe(0);
    }
    const audit = auditWorkload(load, journals, holds);
    expect(audit.details).toEqual([]);
    expect(audit).toMatchObject({ lost: 0, doubled: 0, unacknowledged: 0, unacknowledgedHolds: 0 });
    expect(load.figures.settlements, 'settlements were made under the crashes').toBeGreaterThan(100);
    if (process.env.TOLLGATE_FAULT_STATS)
      console.log({ crashes: CRASHES, ...load.figures, ...audit, retries: load.ledger.retries, appliedDespiteError: load.ledger.appliedDespiteError });
  }, 60_000);
});
