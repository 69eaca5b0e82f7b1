// The test helpers themselves: every other test trusts them to give a real, private Redis.
import { existsSync } from 'node:fs';
import { createCluster } from 'redis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startRedisCluster, type RedisClusterHandle } from './helpers/cluster.ts';
import { connectIoredis, connectNodeRedis, redisUrl, uniquePrefix } from './helpers/redis.ts';
import { findFreePort, isPortFree, rawCommand, startRedisServer } from './helpers/redisServer.ts';

const prefix = uniquePrefix('harness');

function refused(port: number): Promise<string | undefined> {
  return rawCommand(port, ['PING']).then(
    () => undefined,
    (error: NodeJS.ErrnoException) => error.code,
  );
}

describe('the Redis shared by the run', () => {
  it('answers, and is never the Redis on 6379 unless REDIS_URL names it', async () => {
    const url = new URL(redisUrl());
    if (!process.env.REDIS_URL) {
      expect(url.hostname).toBe('127.0.0.1');
      expect(url.port).not.toBe('6379');
    }

    const client = await connectNodeRedis(redisUrl());
    const key = `${prefix}:shared`;
    onTestFinished(async () => {
      await client.del(key);
      await client.close();
    });
    expect(await client.ping()).toBe('PONG');
    await client.set(key, 'node-redis');

    const io = await connectIoredis(redisUrl());
    onTestFinished(async () => {
      await io.quit();
    });
    expect(await io.get(key)).toBe('node-redis');
  });

  it('gives each test file its own key prefix', () => {
    expect(prefix).toMatch(/^t:harness:[0-9a-f]{8}$/);
    expect(uniquePrefix('harness')).not.toBe(prefix);
  });
});

describe('startRedisServer', () => {
  it('stop() really stops it: connections are refused, its temp dir is removed, and a second stop() is harmless', async () => {
    const server = await startRedisServer();
    onTestFinished(() => server.stop());
    expect(await rawCommand(server.port, ['PING'])).toBe('PONG');
    expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
    expect(existsSync(server.dir)).toBe(true);

    await server.stop();
    expect(await refused(server.port)).toBe('ECONNREFUSED');
    expect(existsSync(server.dir)).toBe(false);
    await server.stop();
  });

  it('kill(SIGKILL) then restart() with appendOnly keeps a key acknowledged before the crash', async () => {
    const server = await startRedisServer({ appendOnly: true });
    onTestFinished(() => server.stop());
    const client = await connectNodeRedis(server.url);
    await client.set('acknowledged', 'before-crash');
    client.destroy();

    await server.kill('SIGKILL');
    expect(await refused(server.port)).toBe('ECONNREFUSED');

    await server.restart();
    expect(await rawCommand(server.port, ['GET', 'acknowledged'])).toBe('before-crash');
  });

  it('starts each server on its own free port', async () => {
    const free = await findFreePort();
    expect(await isPortFree(free)).toBe(true);

    const [a, b] = await Promise.all([startRedisServer(), startRedisServer()]);
    onTestFinished(() => Promise.all([a.stop(), b.stop()]).then(() => undefined));
    expect(a.port).not.toBe(b.port);
    expect(a.dir).not.toBe(b.dir);
    expect(await isPortFree(a.port)).toBe(false);
  });
});

describe('startRedisCluster', () => {
  let cluster: RedisClusterHandle;

  beforeAll(async () => {
    cluster = await startRedisCluster();
  });
  afterAll(() => cluster?.stop());

  /** Which node (by port) owns each slot, from CLUSTER SLOTS. */
  async function slotOwners(): Promise<Map<number, number>> {
    const reply = await rawCommand(cluster.nodes[0]!.port, ['CLUSTER', 'SLOTS']);
    const owners = new Map<number, number>();
    for (const range of reply as [number, number, [string, number, ...unknown[]]][]) {
      const [from, to, [, port]] = range;
      for (let slot = from; slot <= to; slot++) owners.set(slot, port);
    }
    return owners;
  }

  it('runs 3 masters that together cover all 16384 slots', async () => {
    expect(cluster.nodes).toHaveLength(3);
    const owners = await slotOwners();
    expect(owners.size).toBe(16384);
    expect(new Set(owners.values())).toEqual(new Set(cluster.nodes.map((node) => node.port)));

    for (const node of cluster.nodes) {
      const nodes = (await rawCommand(node.port, ['CLUSTER', 'NODES'])) as string;
      expect(nodes.split('\n').filter((line) => line.includes('master')).length).toBe(3);
    }
  });

  it('lets a node-redis cluster client SET and GET keys that land on different nodes', async () => {
    const owners = await slotOwners();
    // One key per node, found by asking the cluster which slot each candidate hashes to.
    const keyFor = new Map<number, string>();
    for (let i = 0; keyFor.size < cluster.nodes.length; i++) {
      const key = `${prefix}:cluster:${i}`;
      const slot = (await rawCommand(cluster.nodes[0]!.port, ['CLUSTER', 'KEYSLOT', key])) as number;
      const owner = owners.get(slot)!;
      if (!keyFor.has(owner)) keyFor.set(owner, key);
    }

    const client = createCluster({ rootNodes: cluster.rootNodes });
    client.on('error', () => {});
    await client.connect();
    onTestFinished(() => client.close());

    for (const [port, key] of keyFor) {
      await client.set(key, `on-${port}`);
      expect(await client.get(key)).toBe(`on-${port}`);
      // Stored on the owning node itself, not merely reachable through redirects.
      expect(await rawCommand(port, ['GET', key])).toBe(`on-${port}`);
    }
  });

  it('stop() frees every client port and cluster bus port', async () => {
    await cluster.stop();
    for (const { port } of cluster.nodes) {
      expect(await refused(port)).toBe('ECONNREFUSED');
      expect(await isPortFree(port)).toBe(true);
      expect(await isPortFree(port + 10_000)).toBe(true);
    }
  });
});
