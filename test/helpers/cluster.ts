// A throwaway Redis Cluster of local redis-server processes (masters only), for the tests that
// must hold under cluster key routing (standalone or Redis Cluster; docs/concepts.md#redis-and-the-runtime).
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { PortInUseError, type RedisServer, isPortFree, rawCommand, startRedisServer } from './redisServer.ts';

const HOST = '127.0.0.1';
// Redis listens for cluster gossip on port + 10000.
const BUS_OFFSET = 10_000;
// Client ports 15000-21999 and bus ports 25000-31999 stay below Linux's ephemeral range
// (32768+), so outgoing connections do not take them between our probe and the bind.
const PORT_MIN = 15_000;
const PORT_MAX = 22_000;
const READY_TIMEOUT_MS = 30_000;

export interface RedisClusterHandle {
  nodes: { host: '127.0.0.1'; port: number }[];
  /** Ready for node-redis: `createCluster({ rootNodes: cluster.rootNodes })`. */
  rootNodes: { url: string }[];
  /** The server behind each node, in the same order, for tests that kill or restart one. */
  servers: RedisServer[];
  stop(): Promise<void>;
}

async function findClusterPort(taken: Set<number>): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = randomInt(PORT_MIN, PORT_MAX);
    if (taken.has(port)) continue;
    if ((await isPortFree(port)) && (await isPortFree(port + BUS_OFFSET))) return port;
  }
  throw new Error(`no free port pair (p, p+${BUS_OFFSET}) found in ${PORT_MIN}-${PORT_MAX}`);
}

async function startClusterNode(taken: Set<number>): Promise<RedisServer> {
  for (let attempt = 1; ; attempt++) {
    const port = await findClusterPort(taken);
    taken.add(port);
    try {
      return await startRedisServer({
        port,
        args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000'],
      });
    } catch (error) {
      if (!(error instanceof PortInUseError) || attempt >= 5) throw error;
    }
  }
}

function redisCli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', args, { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error === null) return resolve(stdout);
      const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
      reject(
        new Error(
          missing
            ? 'redis-cli is not on PATH (Debian/Ubuntu: `sudo apt-get install redis-server` ships both).'
            : `redis-cli ${args.join(' ')} failed: ${error.message}\n${stdout}${stderr}`,
        ),
      );
    });
  });
}

async function clusterInfo(port: number): Promise<Map<string, string>> {
  const reply = await rawCommand(port, ['CLUSTER', 'INFO']);
  if (typeof reply !== 'string') throw new Error(`CLUSTER INFO on ${port}: ${String(reply)}`);
  return new Map(
    reply
      .split('\r\n')
      .filter((line) => line.includes(':'))
      .map((line) => line.split(':', 2) as [string, string]),
  );
}

/** Every node must agree before tests start, or the client's first commands get MOVED/CLUSTERDOWN. */
async function waitUntilHealthy(ports: number[]): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let last = '';
  for (;;) {
    const infos = await Promise.all(ports.map((port) => clusterInfo(port).catch(() => new Map<string, string>())));
    const healthy = infos.every(
      (info) => info.get('cluster_state') === 'ok' && info.get('cluster_slots_ok') === '16384' && info.get('cluster_known_nodes') === String(ports.length),
    );
    if (healthy) return;
    last = infos.map((info, i) => `${ports[i]}: state=${info.get('cluster_state')} known=${info.get('cluster_known_nodes')}`).join(', ');
    if (Date.now() > deadline) throw new Error(`Redis Cluster not healthy within ${READY_TIMEOUT_MS} ms (${last})`);
    await sleep(100);
  }
}

export async function startRedisCluster({ masters = 3 }: { masters?: number } = {}): Promise<RedisClusterHandle> {
  // redis-cli --cluster create refuses fewer than 3 masters.
  if (!Number.isInteger(masters) || masters < 3) throw new Error(`a Redis Cluster needs at least 3 masters, got ${masters}`);

  const servers: RedisServer[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
  };
  try {
    const taken = new Set<number>();
    for (let i = 0; i < masters; i++) servers.push(await startClusterNode(taken));
    const ports = servers.map((server) => server.port);
    await redisCli(['--cluster', 'create', ...ports.map((port) => `${HOST}:${port}`), '--cluster-replicas', '0', '--cluster-yes']);
    await waitUntilHealthy(ports);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    nodes: servers.map((server) => ({ host: HOST, port: server.port })),
    rootNodes: servers.map((server) => ({ url: server.url })),
    servers,
    stop,
  };
}

/**
 * One hash slot on its way from one master to another, step by step as `redis-cli --cluster
 * reshard` moves it: the target IMPORTING and the source MIGRATING the slot, then its keys
 * MIGRATEd a few at a time, then the slot assigned to the target on every node. Between the
 * steps a test runs calls against the slot: all keys still on the source, split across both,
 * all moved but the slot not yet assigned.
 */
export interface SlotMove {
  slot: number;
  source: number;
  target: number;
}

async function command(port: number, args: string[]): Promise<unknown> {
  const reply = await rawCommand(port, args);
  if (reply instanceof Error) throw new Error(`${args.join(' ')} on ${port}: ${reply.message}`);
  return reply;
}

const nodeIds = new Map<number, string>();
async function nodeId(port: number): Promise<string> {
  let id = nodeIds.get(port);
  if (id === undefined) {
    id = String(await command(port, ['CLUSTER', 'MYID']));
    nodeIds.set(port, id);
  }
  return id;
}

/** The hash slot of a key (asked of a node, so it is Redis's own answer). */
export async function slotOfKey(cluster: RedisClusterHandle, key: string): Promise<number> {
  return Number(await command(cluster.nodes[0]!.port, ['CLUSTER', 'KEYSLOT', key]));
}

/** The port of the master that serves a slot now. */
export async function ownerOfSlot(cluster: RedisClusterHandle, slot: number): Promise<number> {
  const slots = (await command(cluster.nodes[0]!.port, ['CLUSTER', 'SLOTS'])) as [number, number, [string, number]][];
  return slots.find(([from, to]) => slot >= from && slot <= to)![2][1];
}

/** Marks the slot IMPORTING on the target (another master) and MIGRATING on its owner. */
export async function beginSlotMove(cluster: RedisClusterHandle, slot: number): Promise<SlotMove> {
  const source = await ownerOfSlot(cluster, slot);
  const target = cluster.nodes.find(({ port }) => port !== source)!.port;
  await command(target, ['CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', await nodeId(source)]);
  await command(source, ['CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', await nodeId(target)]);
  return { slot, source, target };
}

/** The keys of the slot still on the source. */
export async function keysOnSource(move: SlotMove): Promise<string[]> {
  return (await command(move.source, ['CLUSTER', 'GETKEYSINSLOT', String(move.slot), '100000'])) as string[];
}

/** MIGRATEs these keys (default: all left) from the source to the target. */
export async function migrateKeys(move: SlotMove, keys?: string[]): Promise<number> {
  const moving = keys ?? (await keysOnSource(move));
  if (moving.length > 0) await command(move.source, ['MIGRATE', HOST, String(move.target), '', '0', '5000', 'KEYS', ...moving]);
  return moving.length;
}

/**
 * MIGRATEs one key; a key the target already holds (BUSYKEY: something wrote it there while the
 * slot was importing) is left on the source and reported, or with `replace` overwritten.
 */
export async function migrateKey(move: SlotMove, key: string, replace = false): Promise<'moved' | 'busy'> {
  const reply = await rawCommand(move.source, ['MIGRATE', HOST, String(move.target), key, '0', '5000', ...(replace ? ['REPLACE'] : [])]);
  if (reply instanceof Error) {
    if (/BUSYKEY/.test(reply.message)) return 'busy';
    throw new Error(`MIGRATE ${key} on ${move.source}: ${reply.message}`);
  }
  return 'moved';
}

/** Moves the keys left, then assigns the slot to the target on the target, the source and every other node. */
export async function endSlotMove(cluster: RedisClusterHandle, move: SlotMove): Promise<void> {
  await migrateKeys(move);
  const target = await nodeId(move.target);
  await command(move.target, ['CLUSTER', 'SETSLOT', String(move.slot), 'NODE', target]);
  await command(move.source, ['CLUSTER', 'SETSLOT', String(move.slot), 'NODE', target]);
  for (const { port } of cluster.nodes) {
    if (port !== move.target && port !== move.source) await command(port, ['CLUSTER', 'SETSLOT', String(move.slot), 'NODE', target]);
  }
}
