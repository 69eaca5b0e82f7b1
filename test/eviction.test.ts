// The eviction guard: credit movements and account creation refuse with EvictionPolicyError
// when a server may evict tollgate's keys (any maxmemory-policy but noeviction, or an INFO it
// refuses); admits keep working, with one process warning; `acceptEviction: true` accepts
// the risk. INFO is read once, before the first movement, and again after a reconnect. Real
// redis-servers of this file's own, one per policy, through both clients.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient } from 'redis';
import { Redis as IORedis } from 'ioredis';
import { createTollgate, fromIoredis, fromNodeRedis, type Tollgate, type TollgateOptions } from '../src/index.ts';
import { EvictionPolicyError, StoreUnavailableError } from '../src/errors.ts';
import { waitUntil } from './faults/support.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';
import { startRedisServer, rawCommand, type RedisServer } from './helpers/redisServer.ts';
import { CLIENT_KINDS, ManualClock, accountId, connectTestClient, type TestClient } from './helpers/tollgate.ts';

const POLICIES = ['volatile-lru', 'allkeys-lru', 'noeviction'] as const;

const ownReads = new Map<number, number>();

/** How many INFO commands the server has answered, not counting this function's own. */
async function infoCalls(server: RedisServer): Promise<number> {
  const stats = String(await rawCommand(server.port, ['INFO', 'commandstats']));
  const own = ownReads.get(server.port) ?? 0;
  ownReads.set(server.port, own + 1);
  return Number(/^cmdstat_info:calls=(\d+)/m.exec(stats)?.[1] ?? 0) - own;
}

const warnings = () =>
  vi.mocked(process.emitWarning).mock.calls.filter(([, options]) => (options as { code?: string } | undefined)?.code === 'TOLLGATE_EVICTION_POLICY');

describe('the eviction guard reads INFO in either protocol', () => {
  it('node-redis speaking RESP3: noeviction lets accounts be created, volatile-lru refuses', async () => {
    const safe = await startRedisServer({ args: ['--maxmemory-policy', 'noeviction'] });
    const evicting = await startRedisServer({ args: ['--maxmemory-policy', 'volatile-lru'] });
    const clients = await Promise.all([safe, evicting].map((server) => createClient({ url: server.url, RESP: 3 }).connect()));
    try {
      const [good, bad] = clients.map((client) => createTollgate({ redis: fromNodeRedis(client), plans: EXAMPLE_PLANS }));
      expect((await good!.accounts.create(accountId(), { plan: 'pro' })).cycle.id).toBe(1);
      vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
      await expect(bad!.accounts.create(accountId(), { plan: 'pro' })).rejects.toMatchObject({ code: 'eviction_policy', policy: 'volatile-lru' });
    } finally {
      vi.restoreAllMocks();
      await Promise.all(clients.map((client) => client.close()));
      await Promise.all([safe.stop(), evicting.stop()]);
    }
  });
});

describe('tollgates sharing one client', () => {
  it('twelve tollgates on one client add one reconnect listener (no MaxListeners warning), and each reads the policy again after a reconnect', async () => {
    const server = await startRedisServer({ args: ['--maxmemory-policy', 'noeviction'] });
    const nodeClient = await createClient({ url: server.url })
      .on('error', () => {})
      .connect();
    const ioClient = new IORedis(server.url);
    ioClient.on('error', () => {});
    try {
      for (const [client, adapter] of [
        [nodeClient, fromNodeRedis(nodeClient)],
        [ioClient, fromIoredis(ioClient)],
      ] as const) {
        const before = client.listenerCount('ready');
        const gates = Array.from({ length: 12 }, () => createTollgate({ redis: adapter, plans: EXAMPLE_PLANS }));
        expect(client.listenerCount('ready') - before).toBe(1);
        const ids = gates.map(() => accountId());
        for (const [i, tg] of gates.entries()) await tg.accounts.create(ids[i]!, { plan: 'pro' });
        vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
        await rawCommand(server.port, ['CONFIG', 'SET', 'maxmemory-policy', 'volatile-lru']);
        await rawCommand(server.port, ['CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes']);
        for (const [i, tg] of gates.entries()) {
          await waitUntil(
            `tollgate ${i} read the policy again`,
            async () => (await tg.credits.charge(ids[i]!, { required: 1 }).catch((error: unknown) => error)) instanceof EvictionPolicyError,
          );
        }
        await rawCommand(server.port, ['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
        vi.restoreAllMocks();
      }
    } finally {
      vi.restoreAllMocks();
      await nodeClient.close();
      ioClient.disconnect();
      await server.stop();
    }
  });
});

describe.each(CLIENT_KINDS)('the eviction guard through %s', (kind) => {
  const servers = new Map<string, RedisServer>();
  const clients: TestClient[] = [];
  const clock = new ManualClock();

  beforeAll(async () => {
    for (const policy of POLICIES) servers.set(policy, await startRedisServer({ args: ['--maxmemory-policy', policy] }));
  });
  afterAll(async () => {
    // A client of a stopped server may wait for it: closed as far as it goes in a moment.
    await Promise.all(clients.map((client) => Promise.race([client.close().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 500))])));
    await Promise.all([...servers.values()].map((server) => server.stop()));
  });
  afterEach(() => vi.restoreAllMocks());

  async function gate(policy: string, options: Partial<TollgateOptions> = {}): Promise<{ tg: Tollgate; server: RedisServer; client: TestClient }> {
    const server = servers.get(policy)!;
    const client = await connectTestClient(kind, { url: server.url });
    clients.push(client);
    const tg = createTollgate({
      redis: client.adapter,
      plans: EXAMPLE_PLANS,
      policies: { visitors: { api: [{ limit: 2, windowMs: 60_000 }] } },
      clock: clock.fn,
      ...options,
    });
    return { tg, server, client };
  }

  it.each(['volatile-lru', 'allkeys-lru'])(
    '%s: account creation and every credit movement refuse with EvictionPolicyError naming maxmemory-policy and the fix',
    async (policy) => {
      vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
      // An account made by a tollgate that accepts the risk, for the guarded one to move credits on.
      const { tg: accepting } = await gate(policy, { acceptEviction: true });
      const id = accountId();
      await accepting.accounts.create(id, { plan: 'pro' });
      const opened = await accepting.holds.open(id, { items: 2, perItem: { required: 1 } });
      if (!opened.ok) throw new Error(opened.reason);

      const { tg } = await gate(policy);
      const refusal = await tg.accounts.create(accountId(), { plan: 'pro' }).catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(EvictionPolicyError);
      expect(refusal).toMatchObject({ code: 'eviction_policy', name: 'EvictionPolicyError', policy });
      expect((refusal as Error).message).toMatch(new RegExp(`maxmemory-policy is ${policy}.*maxmemory-policy noeviction.*acceptEviction: true`));
      const refused = [
        tg.credits.charge(id, { required: 1 }),
        tg.holds.open(id, { items: 1, perItem: { required: 1 } }),
        tg.holds.openBudget(id, { amount: 5, surface: 'web' }),
        tg.holds.settle(id, opened.hold.id, { itemId: 'a' }),
        tg.holds.spend(id, opened.hold.id, { itemId: 'b' }),
        tg.holds.finish(id, opened.hold.id),
        tg.holds.cancel(id, opened.hold.id),
        tg.holds.sweepSubject(id),
        tg.holds.sweep(),
        tg.accounts.startCycle(id),
        tg.accounts.changePlan(id, 'starter'),
      ];
      for (const call of refused) await expect(call).rejects.toBeInstanceOf(EvictionPolicyError);
      // Nothing moved: the credits are as the accepting tollgate left them.
      expect((await accepting.usage(id)).credits).toMatchObject({ allowance: 5000, balance: 4998, spent: 0, held: 2 });

      // Admits keep working, for accounts and for policy subjects.
      expect(await tg.limits.admit(id)).toMatchObject({ ok: true });
      expect(await tg.limits.admit(`ip:${id}`, { policy: 'visitors' })).toMatchObject({ ok: true });
      expect(warnings()).toHaveLength(1);
      expect(String(warnings()[0]![0])).toMatch(/Admits keep working/);
    },
  );

  it('noeviction: INFO is read once, before the first movement, and never on the hot path after it', async () => {
    const { tg, server } = await gate('noeviction');
    const before = await infoCalls(server);
    const id = accountId();
    await tg.limits.admit(`ip:${id}`, { policy: 'visitors' });
    expect(await infoCalls(server)).toBe(before); // an admit reads nothing
    await tg.accounts.create(id, { plan: 'pro' });
    expect(await infoCalls(server)).toBe(before + 1);
    for (let i = 0; i < 20; i++) expect(await tg.credits.charge(id, { required: 1 })).toMatchObject({ ok: true });
    const opened = await tg.holds.open(id, { items: 1, perItem: { required: 1 } });
    expect(opened).toMatchObject({ ok: true });
    expect(await infoCalls(server)).toBe(before + 1);
  });

  it('acceptEviction: true reads no INFO and moves credits on a server that may evict', async () => {
    const { tg, server } = await gate('allkeys-lru', { acceptEviction: true });
    const before = await infoCalls(server);
    const id = accountId();
    await tg.accounts.create(id, { plan: 'pro' });
    expect(await tg.credits.charge(id, { required: 3 })).toMatchObject({ ok: true, balance: 4997 });
    expect(await infoCalls(server)).toBe(before);
    expect(() => createTollgate({ redis: clients[0]!.adapter, plans: EXAMPLE_PLANS, acceptEviction: 'yes' as never })).toThrowError(
      /acceptEviction must be true or false/,
    );
  });

  it('after a reconnect the policy is read again; a server fixed with CONFIG SET is seen once the refusal is a second old', async () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const server = await startRedisServer();
    servers.set(`reconnect-${kind}`, server);
    const { tg } = await gate(`reconnect-${kind}`);
    const id = accountId();
    await tg.accounts.create(id, { plan: 'pro' });
    await rawCommand(server.port, ['CONFIG', 'SET', 'maxmemory-policy', 'volatile-lru']);
    // Known safe and not read again: the charge goes on.
    expect(await tg.credits.charge(id, { required: 1 })).toMatchObject({ ok: true });
    await rawCommand(server.port, ['CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes']);
    await waitUntil(
      'the client reconnected and read the policy',
      async () => (await tg.credits.charge(id, { required: 1 }).catch((error: unknown) => error)) instanceof EvictionPolicyError,
    );
    expect((await tg.usage(id)).credits.balance).toBe(4998);

    await rawCommand(server.port, ['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
    await expect(tg.credits.charge(id, { required: 1 })).rejects.toBeInstanceOf(EvictionPolicyError);
    clock.advance(1_000);
    expect(await tg.credits.charge(id, { required: 1 })).toMatchObject({ ok: true, balance: 4997 });
  });

  it('a server that refuses INFO counts as one that may evict: policy "unknown"', async () => {
    vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const server = servers.get('noeviction')!;
    const user = `noinfo_${kind.replace('-', '')}`;
    await rawCommand(server.port, ['ACL', 'SETUSER', user, 'on', '>secret', '~*', '&*', '+@all', '-info']);
    const url = server.url.replace('redis://', `redis://${user}:secret@`);
    const client = await connectTestClient(kind, { url });
    clients.push(client);
    const tg = createTollgate({ redis: client.adapter, plans: EXAMPLE_PLANS, clock: clock.fn });
    await expect(tg.accounts.create(accountId(), { plan: 'pro' })).rejects.toMatchObject({ code: 'eviction_policy', policy: 'unknown' });
  });

  it('a server that cannot be reached is StoreUnavailableError, not an eviction refusal, and nothing is remembered', async () => {
    const server = await startRedisServer();
    const client = await connectTestClient(kind, { url: server.url });
    clients.push(client);
    servers.set(`down-${kind}`, server);
    const tg = createTollgate({ redis: client.adapter, plans: EXAMPLE_PLANS, clock: clock.fn, timeoutMs: 300 });
    await server.kill();
    await expect(tg.accounts.create(accountId(), { plan: 'pro' })).rejects.toBeInstanceOf(StoreUnavailableError);
    await server.restart();
    await waitUntil('the account is created once the server is back', async () => (await tg.accounts.create(accountId(), { plan: 'pro' })).cycle.id === 1);
  });
});
