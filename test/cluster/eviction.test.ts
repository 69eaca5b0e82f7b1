// The eviction guard on a Redis Cluster: INFO is read on every master, and one master that may
// evict (here volatile-lru, the default of managed services) refuses credit movements and
// account creation for every subject, through both clients. A cluster of this file's own, so
// that its CONFIG SET touches no other test.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTollgate } from '../../src/index.ts';
import { EvictionPolicyError } from '../../src/errors.ts';
import { startRedisCluster, type RedisClusterHandle } from '../helpers/cluster.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';
import { rawCommand } from '../helpers/redisServer.ts';
import { CLIENT_KINDS, ManualClock, accountId, connectTestClient, type TestClient } from '../helpers/tollgate.ts';

describe('the eviction guard on a cluster', () => {
  let cluster: RedisClusterHandle;
  const clients: TestClient[] = [];
  const clock = new ManualClock();
  const reads = new Map<number, number>();

  beforeAll(async () => {
    cluster = await startRedisCluster();
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await cluster?.stop();
  });

  /** INFO commands a master has answered, not counting this function's own. */
  async function infoCalls(port: number): Promise<number> {
    const stats = String(await rawCommand(port, ['INFO', 'commandstats']));
    const own = reads.get(port) ?? 0;
    reads.set(port, own + 1);
    return Number(/^cmdstat_info:calls=(\d+)/m.exec(stats)?.[1] ?? 0) - own;
  }

  async function gate(kind: (typeof CLIENT_KINDS)[number]) {
    const client = await connectTestClient(kind, { cluster: cluster.nodes });
    clients.push(client);
    // Connected to every master first: ioredis checks a new connection is ready with an INFO of its own.
    await client.command(['PING']);
    return createTollgate({ redis: client.adapter, plans: EXAMPLE_PLANS, clock: clock.fn });
  }

  it.each(CLIENT_KINDS)(
    'through %s: every master is read once before the first movement; one master with volatile-lru refuses movements for every subject, admits go on',
    async (kind) => {
      const emitWarning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
      const ports = cluster.nodes.map((node) => node.port);
      const safe = await gate(kind);
      const before = await Promise.all(ports.map(infoCalls));
      const ids = Array.from({ length: 6 }, () => accountId(kind.replace('-', '')));
      for (const id of ids) await safe.accounts.create(id, { plan: 'pro' });
      expect((await Promise.all(ports.map(infoCalls))).map((n, i) => n - before[i]!)).toEqual([1, 1, 1]);

      await rawCommand(ports[1]!, ['CONFIG', 'SET', 'maxmemory-policy', 'volatile-lru']);
      try {
        const guarded = await gate(kind);
        for (const id of ids) {
          await expect(guarded.credits.charge(id, { required: 1 })).rejects.toMatchObject({
            code: 'eviction_policy',
            policy: 'volatile-lru',
            server: expect.stringContaining(String(ports[1])),
          });
          expect(await guarded.limits.admit(id)).toMatchObject({ ok: true });
        }
        await expect(guarded.accounts.create(accountId(), { plan: 'pro' })).rejects.toBeInstanceOf(EvictionPolicyError);
        expect(emitWarning.mock.calls.filter(([, options]) => (options as { code?: string })?.code === 'TOLLGATE_EVICTION_POLICY')).toHaveLength(1);

        await rawCommand(ports[1]!, ['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
        clock.advance(1_000);
        for (const id of ids) expect(await guarded.credits.charge(id, { required: 1 })).toMatchObject({ ok: true, balance: 4999 });
      } finally {
        await rawCommand(ports[1]!, ['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
        emitWarning.mockRestore();
      }
    },
  );
});
