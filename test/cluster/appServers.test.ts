// Many app servers on one Redis Cluster (issue "Scale-out and faults"): tollgates on separate
// node-redis and ioredis cluster clients race for the same accounts on every master, and an
// account's slot is moved to another master while they charge it and settle its hold.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, type Tollgate } from '../../src/index.ts';
import { SubjectKeys } from '../../src/redisKeys.ts';
import { uniquePrefix } from '../helpers/redis.ts';
import { rawCommand } from '../helpers/redisServer.ts';
import { ManualClock, accountId, clusterNodes, connectTestClient, type TestClient } from '../helpers/tollgate.ts';
import { ChargeLedger, auditCharges, expectSound, readJournal, untilAnswered } from '../faults/support.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

/** Four app servers: two per client kind, each with its own connections. */
const SERVERS = ['node-redis', 'ioredis', 'node-redis', 'ioredis'] as const;

describe('several app servers on one cluster', () => {
  const clock = new ManualClock();
  const prefix = uniquePrefix('servers');
  let clients: TestClient[];
  let gates: Tollgate[];

  beforeAll(async () => {
    clients = await Promise.all(SERVERS.map((kind) => connectTestClient(kind)));
    gates = clients.map((client) => createTollgate({ plans: EXAMPLE_PLANS, redis: client.adapter, prefix, clock: clock.fn }));
  });
  afterAll(() => Promise.all((clients ?? []).map((client) => client.close())));

  const command = (args: string[]) => clients[0]!.command(args);
  const nodes = () => clusterNodes()!;

  /** The master (by port) that owns a slot, from CLUSTER SLOTS. */
  async function ownerOf(slot: number): Promise<number> {
    const ranges = (await rawCommand(nodes()[0]!.port, ['CLUSTER', 'SLOTS'])) as [number, number, [string, number]][];
    const range = ranges.find(([from, to]) => from <= slot && slot <= to);
    if (!range) throw new Error(`slot ${slot} has no owner`);
    return range[2][1];
  }
  const slotOf = async (key: string) => Number(await command(['CLUSTER', 'KEYSLOT', key]));

  /** One fresh account on each master, so every node serves the race. */
  async function accountPerMaster(label: string): Promise<string[]> {
    const byPort = new Map<number, string>();
    while (byPort.size < nodes().length) {
      const id = accountId(label);
      const port = await ownerOf(await slotOf(id));
      if (!byPort.has(port)) byPort.set(port, id);
    }
    return [...byPort.values()];
  }

  it('the race for the last credits holds on every master: 64 charges from 4 servers against 37 credits -> exactly 37', async () => {
    const ids = await accountPerMaster('race');
    await Promise.all(
      ids.map(async (id) => {
        await gates[0]!.accounts.create(id, { plan: 'starter' });
        await gates[1]!.credits.charge(id, { required: 1000 - 37 });
      }),
    );
    const outcomes = await Promise.all(
      ids.flatMap((id) => Array.from({ length: 64 }, (_, i) => gates[i % gates.length]!.credits.charge(id, { required: 1 }).then((o) => ({ id, o })))),
    );
    for (const id of ids) {
      const mine = outcomes.filter((x) => x.id === id).map((x) => x.o);
      expect(
        mine.filter((o) => o.ok),
        id,
      ).toHaveLength(37);
      expect(
        mine.every((o) => o.ok || (o.remaining === 0 && o.needed === 1)),
        id,
      ).toBe(true);
      const balances = mine.flatMap((o) => (o.ok ? [o.balance] : [])).sort((a, b) => a - b);
      expect(balances, id).toEqual(Array.from({ length: 37 }, (_, i) => i));
      expect((await gates[2]!.usage(id)).credits).toMatchObject({ balance: 0, spent: 1000, held: 0 });
      await expectSound(gates[3]!, id);
    }
  });

  it('the holds cap and an Idempotency-Key hold across servers: never a second hold for one key, never more than the cap', async () => {
    const [id] = await accountPerMaster('cap');
    await gates[0]!.accounts.create(id!, { plan: 'starter' });
    // 16 servers' worth of requests with the same key and body: one hold, the rest replay it or find the key in use.
    const keyed = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        gates[i % gates.length]!.holds.open(id!, { items: 10, perItem: { required: 1 }, idempotency: { key: 'same-key', body: { items: 10 } } }),
      ),
    );
    const created = keyed.filter((o) => o.ok && !o.replayed);
    expect(created).toHaveLength(1);
    const holdId = created[0]!.ok ? created[0]!.hold.id : '';
    for (const o of keyed) if (o.ok) expect(o.hold.id).toBe(holdId);
    // The cap of 2: one more hold fits, whatever the number of servers asking.
    const unkeyed = await Promise.all(Array.from({ length: 16 }, (_, i) => gates[i % gates.length]!.holds.openBudget(id!, { amount: 5 })));
    expect(unkeyed.filter((o) => o.ok)).toHaveLength(1);
    expect(unkeyed.filter((o) => !o.ok).every((o) => !o.ok && o.reason === 'hold_limit_reached')).toBe(true);
    expect((await gates[1]!.usage(id!)).credits).toMatchObject({ balance: 1000 - 15, held: 15 });
    await expectSound(gates[2]!, id!);
  });

  it('settlements of one hold from every server, each item sent by two servers at once: each item settles once', async () => {
    const ids = await accountPerMaster('settle');
    for (const id of ids) {
      await gates[0]!.accounts.create(id, { plan: 'pro' });
      const opened = await gates[1]!.holds.open(id, { items: 40, perItem: { required: 1, optional: 1 } });
      if (!opened.ok) throw new Error(opened.reason);
      const outcomes = await Promise.all(
        Array.from({ length: 80 }, (_, i) => {
          const item = Math.floor(i / 2);
          return gates[i % gates.length]!.holds.settle(
            id,
            opened.hold.id,
            item % 4 === 3 ? { itemId: `item-${item}`, failed: 'x' } : { itemId: `item-${item}`, optionalSpent: item % 2 },
          );
        }),
      );
      expect(
        outcomes.filter((o) => o.accepted && !o.replayed),
        id,
      ).toHaveLength(40);
      expect(
        outcomes.filter((o) => o.accepted && o.replayed),
        id,
      ).toHaveLength(40);
      // 30 delivered (10 with their optional credit), 10 failed: 40 spent, 40 refunded at the end.
      expect(await gates[3]!.holds.get(id, opened.hold.id)).toMatchObject({
        status: 'completed',
        settled: 40,
        delivered: 30,
        optionalSpent: 10,
        failed: { x: 10 },
        spent: 40,
        refunded: 40,
      });
      expect((await gates[2]!.usage(id)).credits).toMatchObject({ balance: 4960, spent: 40, held: 0 });
      await expectSound(gates[0]!, id);
    }
  });

  it("moving an account's slot to another master under load: callers retry with their operation ids and item ids, every charge and settlement lands once", async () => {
    const [id, bystander] = await accountPerMaster('moved');
    for (const a of [id!, bystander!]) await gates[0]!.accounts.create(a, { plan: 'business' });
    const opened = await gates[0]!.holds.open(id!, { items: 5000, perItem: { required: 1, optional: 1 } });
    if (!opened.ok) throw new Error(opened.reason);
    const holdId = opened.hold.id;
    let settledSpend = 0;
    let settlements = 0;
    const slot = await slotOf(id!);
    const from = await ownerOf(slot);
    const to = nodes().find((n) => n.port !== from && n.port !== 0)!.port;

    const ledger = new ChargeLedger();
    const failures: unknown[] = [];
    let running = true;
    let done = 0;
    const worker = async (w: number) => {
      for (let i = 0; running; i++) {
        const tg = gates[w % gates.length]!;
        if (i % 5 === 4) {
          const { value } = await untilAnswered(() => tg.holds.settle(id!, holdId, { itemId: `w${w}-${i}`, optionalSpent: i % 2 }));
          if (!value.accepted) throw new Error(`settlement refused: ${value.reason}`);
          settlements++;
          settledSpend += 1 + (i % 2);
        } else {
          const target = i % 4 === 3 ? bystander! : id!;
          await ledger.charge(tg, target, `w${w}-${i}`, 1, i % 3);
        }
        done++;
      }
    };
    const workers = Array.from({ length: 8 }, (_, w) =>
      worker(w).catch((error: unknown) => {
        failures.push(error);
        running = false;
      }),
    );
    /** Waits (bounded) until the workers have finished n more charges. */
    const progress = async (n: number) => {
      const until = done + n;
      const deadline = Date.now() + 10_000;
      while (done < until && running && Date.now() < deadline) await sleep(2);
    };

    await progress(50);
    // While the account is half moved every charge of it gets TRYAGAIN, so the pace is set by time.
    const migrated = await migrateSlot(
      slot,
      from,
      to,
      nodes().map((n) => n.port),
      () => sleep(15),
    );
    await progress(50);
    running = false;
    await Promise.all(workers);
    expect(failures).toEqual([]);
    expect(migrated).toBeGreaterThanOrEqual(4);

    // The account's keys now live on the new master only.
    const keys = new SubjectKeys(prefix, id!);
    expect(await rawCommand(to, ['EXISTS', keys.account, keys.journal])).toBe(2);
    expect(await rawCommand(from, ['EXISTS', keys.account, keys.journal])).toBeInstanceOf(Error);
    expect(await ownerOf(slot)).toBe(to);

    const journal = [...(await readJournal(command, prefix, id!)), ...(await readJournal(command, prefix, bystander!))];
    const audit = auditCharges(journal, ledger);
    expect(audit).toMatchObject({ lost: 0, doubled: 0, unacknowledged: 0 });
    const spent = [...ledger.acknowledged.entries()].reduce((sum, [, n]) => sum + n, 0);
    const a = await expectSound(gates[1]!, id!);
    const b = await expectSound(gates[2]!, bystander!);
    expect(a.credits.spent + b.credits.spent).toBe(spent + settledSpend);
    expect(a.holds[0]).toMatchObject({ id: holdId, settled: settlements, spent: settledSpend });
    expect(journal.filter((e) => e.kind === 'spend' && e.ref === holdId).reduce((sum, e) => sum + e.amount, 0)).toBe(settledSpend);
    expect(audit.acknowledged).toBeGreaterThan(100);
    expect(settlements).toBeGreaterThan(20);
    if (process.env.TOLLGATE_FAULT_STATS) console.log({ migrated, ...audit, retries: ledger.retries, appliedDespiteError: ledger.appliedDespiteError });
  });
});

/**
 * Moves one slot between masters as `redis-cli --cluster reshard` does: IMPORTING on the
 * target, MIGRATING on the source, MIGRATE key by key (so a script can meet an account half
 * moved: TRYAGAIN or ASK), then the new owner on every master.
 */
async function migrateSlot(slot: number, from: number, to: number, ports: number[], between: () => Promise<unknown>): Promise<number> {
  const idOf = async (port: number) => String(await rawCommand(port, ['CLUSTER', 'MYID']));
  const ok = (reply: unknown) => {
    if (reply instanceof Error) throw reply;
    return reply;
  };
  const [fromId, toId] = [await idOf(from), await idOf(to)];
  ok(await rawCommand(to, ['CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId]));
  ok(await rawCommand(from, ['CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId]));
  let moved = 0;
  for (;;) {
    const keys = ok(await rawCommand(from, ['CLUSTER', 'GETKEYSINSLOT', String(slot), '1'])) as string[];
    if (keys.length === 0) break;
    ok(await rawCommand(from, ['MIGRATE', '127.0.0.1', String(to), '', '0', '5000', 'KEYS', ...keys]));
    moved += keys.length;
    await between();
  }
  for (const port of [to, from, ...ports.filter((p) => p !== to && p !== from)]) {
    ok(await rawCommand(port, ['CLUSTER', 'SETSLOT', String(slot), 'NODE', toId]));
  }
  return moved;
}
