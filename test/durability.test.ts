// Durability (createTollgate's `durability`): a credit movement is acknowledged only once WAIT
// says the replicas have it; one that cannot be confirmed in time is an UnconfirmedError with
// the operation id it used, and the retry with that id applies once. Admits and reads never
// wait, and with the option off nothing changes: no connection of tollgate's own, no
// operation id the caller did not give. Real processes: a primary and its replica, stopped
// with SIGSTOP to stand for a replica that stopped confirming; and a cluster with a replica
// per master, where each movement's WAIT goes to the master that ran it.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, fromIoredis, fromNodeRedis, isTollgateError, type Tollgate } from '../src/index.ts';
import { InvalidInputError, StoreUnavailableError, UnconfirmedError } from '../src/errors.ts';
import { replyForError } from '../src/http.ts';
import { keySlot } from '../src/redis/dedicated.ts';
import { SubjectKeys } from '../src/redisKeys.ts';
import { rawCommand } from './helpers/redisServer.ts';
import {
  connectCluster,
  connectFailFast,
  pause,
  resume,
  startReplicatedCluster,
  startReplicatedPair,
  waitUntil,
  type ReplicatedCluster,
  type ReplicatedPair,
} from './helpers/replicas.ts';
import { CLIENT_KINDS, ManualClock, accountId, type TestClient } from './helpers/tollgate.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';

const WAIT_MS = 200;

async function unconfirmed(call: Promise<unknown>): Promise<{ error: UnconfirmedError; ms: number }> {
  const started = performance.now();
  try {
    await call;
  } catch (error) {
    if (!(error instanceof UnconfirmedError)) throw error;
    return { error, ms: performance.now() - started };
  }
  throw new Error('the movement was acknowledged although the replica could not confirm it');
}

async function timed<T>(call: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await call;
  return { value, ms: performance.now() - started };
}

describe('durability on a primary with one replica', () => {
  let pair: ReplicatedPair;
  let stopped = false;
  const stopReplica = () => {
    pause(pair.replicaPid);
    stopped = true;
  };
  const resumeReplica = () => {
    if (stopped) resume(pair.replicaPid);
    stopped = false;
  };

  beforeAll(async () => {
    pair = await startReplicatedPair();
  });
  afterEach(() => resumeReplica());
  afterAll(async () => {
    resumeReplica();
    await pair?.stop();
  });

  /** A raw command on the replica: what a promoted replica would hold. */
  const onReplica = (args: string[]) => rawCommand(pair.replica.port, args);

  describe.each(CLIENT_KINDS)('through %s', (kind) => {
    let client: TestClient;
    let tg: Tollgate;
    const prefix = `dur-${kind}`;
    const clock = new ManualClock();

    beforeAll(async () => {
      client = await connectFailFast(kind, pair.primary.port);
      tg = createTollgate({
        plans: EXAMPLE_PLANS,
        redis: client.adapter,
        prefix,
        clock: clock.fn,
        timeoutMs: 1_000,
        durability: { replicas: 1, timeoutMs: WAIT_MS, connections: 2 },
      });
    });
    afterAll(async () => {
      await tg?.close();
      await client?.close();
    });

    async function account(): Promise<string> {
      const id = accountId('dur');
      await tg.accounts.create(id, { plan: 'business' });
      return id;
    }

    it('acknowledges a charge only once the replica has it', async () => {
      const id = await account();
      const keys = new SubjectKeys(prefix, id);
      const outcome = await tg.credits.charge(id, { required: 2, operationId: 'order-1' });
      expect(outcome).toMatchObject({ ok: true, charged: 2, replayed: false });
      // Read straight after the acknowledgement, no waiting: the replica already holds it.
      expect(await onReplica(['HGET', keys.operations, 'oorder-1'])).toMatch(/^\d+ 2 2:0 0 c1=2$/);
      expect(await onReplica(['HGET', keys.account, 'b'])).toBe(String(outcome.ok && outcome.balance));
    });

    it("gives a charge without an operation id one of the library's, so that it can be retried", async () => {
      const id = await account();
      await tg.credits.charge(id, { required: 1 });
      const journal = (await onReplica(['XRANGE', new SubjectKeys(prefix, id).journal, '-', '+'])) as [string, string[]][];
      const refs = journal.map(([, fields]) => fields[fields.indexOf('r') + 1]).filter((ref) => ref?.startsWith('op_'));
      expect(refs).toHaveLength(1);
    });

    it('with the replica stopped, a charge is unconfirmed within about timeoutMs and names its operation id; retried with it after the replica resumes, it applies once', async () => {
      const id = await account();
      stopReplica();
      const { error, ms } = await unconfirmed(tg.credits.charge(id, { required: 3 }));
      expect(ms).toBeGreaterThanOrEqual(WAIT_MS - 5);
      expect(ms).toBeLessThan(WAIT_MS + 400);
      expect(error.operationId).toMatch(/^op_/);
      expect(error).toBeInstanceOf(StoreUnavailableError);
      expect(isTollgateError(error, 'unavailable')).toBe(true);
      expect(error.name).toBe('UnconfirmedError');
      // The primary ran it: a retry while the replica is still stopped replays it, and is not
      // acknowledged either, since the replica has not confirmed the first run.
      await unconfirmed(tg.credits.charge(id, { required: 3, operationId: error.operationId }));
      resumeReplica();
      const retried = await tg.credits.charge(id, { required: 3, operationId: error.operationId });
      expect(retried).toEqual({
        ok: true,
        charged: 3,
        balance: 20_000 - 3,
        available: 20_000 - 3,
        sources: [{ grantId: 'cycle:1', amount: 3 }],
        replayed: true,
      });
      const journal = (await onReplica(['XRANGE', new SubjectKeys(prefix, id).journal, '-', '+'])) as [string, string[]][];
      expect(journal.filter(([, fields]) => fields.includes(error.operationId))).toHaveLength(1);
      expect((await tg.credits.reconcile(id)).matches).toBe(true);
    });

    it('a movement that finds the function library missing loads it on its own connection and is confirmed: a promoted replica has both', async () => {
      const id = await account();
      const keys = new SubjectKeys(prefix, id);
      // Flushed on the primary, and so on the replica (FUNCTION FLUSH is replicated).
      await client.command(['FUNCTION', 'FLUSH']);
      const calls = async (command: string) =>
        Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(String(await client.command(['INFO', 'commandstats'])))?.[1] ?? 0);
      const [fcalls, loads] = [await calls('fcall'), await calls('function\\|load')];
      expect(await tg.credits.charge(id, { required: 2, operationId: 'after-flush' })).toMatchObject({ ok: true, charged: 2 });
      // The FCALL that found it missing, the load, and the FCALL again.
      expect([(await calls('fcall')) - fcalls, (await calls('function\\|load')) - loads]).toEqual([2, 1]);
      expect(await onReplica(['HGET', keys.operations, 'oafter-flush'])).toMatch(/^\d+ 2 2:0 0 c1=2$/);
      expect(await onReplica(['FUNCTION', 'LIST'])).toHaveLength(1);
    });

    it('scripts by EVALSHA: a movement after SCRIPT FLUSH is sent again by EVAL and confirmed', async () => {
      const evalGate = createTollgate({
        plans: EXAMPLE_PLANS,
        redis: client.adapter,
        prefix,
        clock: clock.fn,
        scripts: 'eval',
        durability: { replicas: 1, timeoutMs: WAIT_MS, connections: 1 },
      });
      try {
        const id = await account();
        await client.command(['SCRIPT', 'FLUSH']);
        expect(await evalGate.credits.charge(id, { required: 3, operationId: 'after-script-flush' })).toMatchObject({ ok: true, charged: 3 });
        expect(await onReplica(['HGET', new SubjectKeys(prefix, id).operations, 'oafter-script-flush'])).toMatch(/^\d+ 3 3:0 0 c1=3$/);
      } finally {
        await evalGate.close();
      }
    });

    it('admits and reads never wait for the replicas', async () => {
      const id = await account();
      stopReplica();
      const admit = await timed(tg.limits.admit(id, { credits: 1 }));
      expect(admit.value.allowed).toBe(true);
      const usage = await timed(tg.usage(id));
      const inspect = await timed(tg.accounts.inspect(id));
      for (const { ms } of [admit, usage, inspect]) expect(ms).toBeLessThan(WAIT_MS / 2);
    });

    it('a charge refused for want of credits is answered at once: nothing moved, nothing to confirm', async () => {
      const id = await account();
      await tg.credits.charge(id, { required: 20_000, operationId: 'all-of-it' });
      stopReplica();
      const refused = await timed(tg.credits.charge(id, { required: 1, operationId: 'one-more' }));
      expect(refused.value).toMatchObject({ ok: false, reason: 'insufficient' });
    });

    it('holds: an unconfirmed open, settlement and cancel each name the id to retry with, and each retry applies once', async () => {
      const id = await account();
      const keys = new SubjectKeys(prefix, id);
      stopReplica();
      const open = await unconfirmed(tg.holds.open(id, { items: 4, perItem: { required: 2 } }));
      expect(open.error.operationId).toMatch(/^hold_/);
      resumeReplica();
      const holdId = open.error.operationId;
      const reopened = await tg.holds.open(id, { items: 4, perItem: { required: 2 }, holdId });
      expect(reopened).toMatchObject({ ok: true, replayed: true, hold: { id: holdId, reserved: 8 } });
      expect(await onReplica(['EXISTS', keys.hold(holdId)])).toBe(1);

      stopReplica();
      const settle = await unconfirmed(tg.holds.settle(id, holdId, { itemId: 'item-1' }));
      expect(settle.error.operationId).toBe('item-1');
      resumeReplica();
      const settled = await tg.holds.settle(id, holdId, { itemId: 'item-1' });
      expect(settled).toMatchObject({ ok: true, accepted: true, replayed: true, hold: { delivered: 1, spent: 2 } });
      expect(await onReplica(['HEXISTS', keys.hold(holdId), 'i:item-1'])).toBe(1);

      stopReplica();
      const cancel = await unconfirmed(tg.holds.cancel(id, holdId));
      expect(cancel.error.operationId).toBe(holdId);
      resumeReplica();
      const again = await tg.holds.cancel(id, holdId);
      expect(again).toMatchObject({ ok: false, ended: false, hold: { status: 'canceled', spent: 2, refunded: 6, held: 0 } });
      const credits = (await tg.accounts.inspect(id)).credits;
      expect(credits).toMatchObject({ balance: 20_000 - 2, spent: 2, held: 0, available: 20_000 - 2 });
      expect((await tg.credits.reconcile(id)).matches).toBe(true);
    });

    it('budget holds: an unconfirmed spend is retried with its item id and applies once', async () => {
      const id = await account();
      const opened = await tg.holds.openBudget(id, { amount: 10, surface: 'api' });
      if (!opened.ok) throw new Error(`open refused: ${opened.reason}`);
      stopReplica();
      const spend = await unconfirmed(tg.holds.spend(id, opened.hold.id, { itemId: 'page-1', amount: 3 }));
      expect(spend.error.operationId).toBe('page-1');
      resumeReplica();
      expect(await tg.holds.spend(id, opened.hold.id, { itemId: 'page-1', amount: 3 })).toMatchObject({
        ok: true,
        accepted: true,
        replayed: true,
        hold: { spent: 3 },
      });
    });

    it("the sweep's ends are confirmed too: an unconfirmed sweep names the subject, and sweeping again is safe", async () => {
      const id = await account();
      const opened = await tg.holds.open(id, { items: 2, perItem: { required: 1 } });
      if (!opened.ok) throw new Error(`open refused: ${opened.reason}`);
      // Past the 5-minute lease: the worker stopped reporting.
      clock.advance(10 * 60_000);
      stopReplica();
      const sweep = await unconfirmed(tg.holds.sweepSubject(id));
      expect(sweep.error.operationId).toBe(id);
      resumeReplica();
      await tg.holds.sweepSubject(id);
      expect(await tg.holds.get(id, opened.hold.id)).toMatchObject({ status: 'completed', endReason: 'lease_expired', refunded: 2, held: 0 });
      expect((await tg.credits.reconcile(id)).matches).toBe(true);
    });
  });

  it('with durability off, tollgate opens no connection of its own and charges carry no operation id the caller did not give', async () => {
    const client = await connectFailFast('node-redis', pair.primary.port);
    const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: client.adapter, prefix: 'dur-off', clock: new ManualClock().fn });
    try {
      const id = accountId('off');
      await tg.accounts.create(id, { plan: 'business' });
      const before = String(await rawCommand(pair.primary.port, ['CLIENT', 'LIST']))
        .trim()
        .split('\n').length;
      stopReplica();
      const charge = await timed(tg.credits.charge(id, { required: 1 }));
      expect(charge.value.ok).toBe(true);
      expect(charge.ms).toBeLessThan(WAIT_MS / 2);
      resumeReplica();
      const after = String(await rawCommand(pair.primary.port, ['CLIENT', 'LIST']))
        .trim()
        .split('\n').length;
      expect(after).toBe(before);
      expect(await rawCommand(pair.primary.port, ['KEYS', 'dur-off:*:op:*'])).toEqual([]);
    } finally {
      await tg.close();
      await client.close();
    }
  });

  it('opens at most `connections` connections of its own, and close() closes them', async () => {
    const client = await connectFailFast('ioredis', pair.primary.port);
    const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: client.adapter, prefix: 'dur-pool', durability: { replicas: 1, connections: 3 } });
    const count = async () =>
      String(await rawCommand(pair.primary.port, ['CLIENT', 'LIST']))
        .trim()
        .split('\n').length;
    try {
      const before = await count();
      const id = accountId('pool');
      await tg.accounts.create(id, { plan: 'business' });
      await Promise.all(Array.from({ length: 30 }, (_, i) => tg.credits.charge(id, { required: 1, operationId: `p-${i}` })));
      const during = await count();
      expect(during - before).toBeGreaterThanOrEqual(1);
      expect(during - before).toBeLessThanOrEqual(3);
      await tg.close();
      // The server drops a connection just after answering its QUIT.
      await waitUntil('the connections to close', async () => (await count()) === before, 2_000);
      await expect(tg.credits.charge(id, { required: 1, operationId: 'after-close' })).rejects.toBeInstanceOf(UnconfirmedError);
    } finally {
      await tg.close();
      await client.close();
    }
  });
});

describe('durability options', () => {
  it('refuses bad settings, and a client that cannot open connections of its own, before Redis is touched', async () => {
    const adapted = { [Symbol.for('tollgate.redisScriptClient')]: true, send: async () => [0] };
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: adapted as never, durability: { replicas: 1 } })).toThrow(/durability needs a client/);
    // Clients that cannot be copied: no connection of tollgate's own can be opened from them.
    const bare = fromNodeRedis({ sendCommand: async () => [0] });
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: bare, durability: { replicas: 1 } })).toThrow(/durability needs a client/);
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: fromIoredis({ call: async () => [0] }), durability: { replicas: 1 } })).toThrow(
      /durability needs a client/,
    );
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: bare })).not.toThrow();
    const client = { ...adapted, dedicated: async () => ({ pipeline: async () => [], close: async () => {} }) };
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: client as never, durability: { replicas: 0 } })).toThrow(InvalidInputError);
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: client as never, durability: { replicas: 1, timeoutMs: 0 } })).toThrow(/durability.timeoutMs/);
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: client as never, durability: { replicas: 1, connections: 0 } })).toThrow(
      /durability.connections/,
    );
    expect(() => createTollgate({ plans: EXAMPLE_PLANS, redis: client as never, durability: false })).not.toThrow();
  });

  // The example servers' answer over HTTP: test/examples/contract/durable.test.ts.
  it('an unconfirmed movement is answered 503 with Retry-After in the error body, like an unreachable store', () => {
    const reply = replyForError(new UnconfirmedError('op_1', 'charge "op_1" is not confirmed'), 'req_1');
    expect(reply).toMatchObject({ status: 503, headers: { 'Retry-After': '1' }, body: { error: { type: 'unavailable' }, request_id: 'req_1' } });
  });
});

describe('durability on a Redis Cluster with a replica per master', () => {
  let cluster: ReplicatedCluster;
  beforeAll(async () => {
    cluster = await startReplicatedCluster();
  }, 90_000);
  afterAll(async () => {
    for (const pid of cluster?.replicaPidOf.values() ?? []) resume(pid);
    await cluster?.stop();
  });

  it('computes the slot of a key as the cluster does', async () => {
    const port = cluster.nodes[0]!.port;
    for (const key of ['tg:{acct_1}:a', 'tg:sweep', '{}x', 'a{b}c{d}', 'é{ü}', 'plain']) {
      expect(keySlot(key), key).toBe(await rawCommand(port, ['CLUSTER', 'KEYSLOT', key]));
    }
  });

  describe.each(CLIENT_KINDS)('through %s', (kind) => {
    let client: TestClient;
    let tg: Tollgate;
    beforeAll(async () => {
      client = await connectCluster(kind, cluster.nodes);
      tg = createTollgate({
        plans: EXAMPLE_PLANS,
        redis: client.adapter,
        prefix: `durc-${kind}`,
        clock: new ManualClock().fn,
        durability: { replicas: 1, timeoutMs: WAIT_MS },
      });
    });
    afterAll(async () => {
      await tg?.close();
      await client?.close();
    });

    it("waits on the master that ran the movement: with one master's replica stopped, only that master's subjects are unconfirmed", async () => {
      // CLUSTER SLOTS: which master serves each account.
      const slots = (await rawCommand(cluster.nodes[0]!.port, ['CLUSTER', 'SLOTS'])) as [number, number, [string, number]][];
      const masterOf = (id: string) => {
        const slot = keySlot(new SubjectKeys(`durc-${kind}`, id).account);
        return slots.find(([from, to]) => slot >= from && slot <= to)![2][1];
      };
      const accounts = Array.from({ length: 12 }, () => accountId('durc'));
      for (const id of accounts) await tg.accounts.create(id, { plan: 'business' });
      for (const id of accounts) expect(await tg.credits.charge(id, { required: 1 })).toMatchObject({ ok: true });

      const stoppedMaster = masterOf(accounts[0]!);
      const pid = cluster.replicaPidOf.get(stoppedMaster)!;
      pause(pid);
      try {
        for (const id of accounts) {
          const call = tg.credits.charge(id, { required: 1, operationId: `c-${id}` });
          if (masterOf(id) === stoppedMaster) {
            expect((await unconfirmed(call)).error.operationId).toBe(`c-${id}`);
          } else {
            const { value, ms } = await timed(call);
            expect(value).toMatchObject({ ok: true });
            expect(ms).toBeLessThan(WAIT_MS);
          }
        }
      } finally {
        resume(pid);
      }
      for (const id of accounts) expect(await tg.credits.charge(id, { required: 1, operationId: `c-${id}` })).toMatchObject({ ok: true, charged: 1 });
      for (const id of accounts) expect((await tg.accounts.inspect(id)).credits.spent).toBe(2);
    });
  });
});
