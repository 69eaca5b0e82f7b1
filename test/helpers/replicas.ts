// Redis with replicas, for the durability tests: a primary and its replica (optionally behind
// a link that delays what the primary sends, as a slow network does), a 3-master cluster with
// one replica each, clients that fail fast while a server is down, and pausing a server
// (SIGSTOP) to stand for a replica that stopped confirming.
import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster } from 'ioredis';
import { createCluster } from 'redis';
import { fromIoredis, fromNodeRedis } from '../../src/index.ts';
import { keySlot } from '../../src/redis/dedicated.ts';
import { connectClient, serverPid, waitUntil } from '../faults/support.ts';
import { PortInUseError, isPortFree, rawCommand, startRedisServer, type RedisServer } from './redisServer.ts';

export { serverPid, waitUntil };
import type { ClientKind, TestClient } from './tollgate.ts';

const HOST = '127.0.0.1';

/** Stops a server's process (SIGSTOP) until resume: it neither reads nor answers. */
export function pause(pid: number): void {
  process.kill(pid, 'SIGSTOP');
}

export function resume(pid: number): void {
  process.kill(pid, 'SIGCONT');
}

async function linkUp(replicaPort: number): Promise<boolean> {
  return /master_link_status:up/.test(String(await rawCommand(replicaPort, ['INFO', 'replication'])));
}

/**
 * Writes reach the replica: after a diskless sync the primary streams nothing to it until
 * the replica's first acknowledgement, up to a second after the replica's own link is up
 * (and WAIT counts it online meanwhile). `key` must be served by that primary.
 */
async function streaming(primaryPort: number, replicaPort: number, key = 'replication-probe'): Promise<boolean> {
  const offset = async (port: number, field: string) =>
    Number(new RegExp(`${field}:(\\d+)`).exec(String(await rawCommand(port, ['INFO', 'replication'])))?.[1] ?? -1);
  await rawCommand(primaryPort, ['SET', key, String(Math.random())]);
  const written = await offset(primaryPort, 'master_repl_offset');
  await sleep(20);
  return (await offset(replicaPort, 'slave_repl_offset')) >= written;
}

/**
 * A TCP link from a replica to its primary that holds what the primary sends for lagMs before
 * passing it on (the replica's acknowledgements go back at once). cut() drops the link and
 * whatever it still holds, as a network partition or a dead machine would.
 */
export interface LaggingLink {
  port: number;
  cut(): void;
  close(): Promise<void>;
}

export async function startLaggingLink(upstreamPort: number, lagMs: number): Promise<LaggingLink> {
  const open = new Set<net.Socket>();
  let cut = false;
  const server = net.createServer((replica) => {
    const primary = net.connect({ host: HOST, port: upstreamPort });
    open.add(replica);
    open.add(primary);
    const drop = () => {
      replica.destroy();
      primary.destroy();
    };
    replica.on('data', (chunk) => primary.write(chunk));
    // Equal delays fire in the order they were set, so the stream stays in order.
    primary.on('data', (chunk) => {
      setTimeout(() => {
        if (!cut && !replica.destroyed) replica.write(chunk);
      }, lagMs);
    });
    for (const socket of [replica, primary]) {
      socket.on('error', drop);
      socket.on('close', () => {
        open.delete(socket);
        // What the primary sent before it closed still arrives, lagMs later, unless cut.
        setTimeout(drop, lagMs + 1);
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      cut = true;
      for (const socket of open) socket.destroy();
    },
    close() {
      cut = true;
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

export interface ReplicatedPair {
  primary: RedisServer;
  replica: RedisServer;
  replicaPid: number;
  /** The lagging link between them, when asked for. */
  link?: LaggingLink;
  stop(): Promise<void>;
}

/**
 * A primary and one replica. appendOnly: the primary fsyncs every write (appendfsync always);
 * lagMs: the replica hears the primary through a link that holds the stream that long.
 */
export async function startReplicatedPair(options: { appendOnly?: boolean; lagMs?: number } = {}): Promise<ReplicatedPair> {
  // No 5 s wait before the first full sync.
  const primary = await startRedisServer({ appendOnly: options.appendOnly, args: ['--repl-diskless-sync-delay', '0'] });
  const link = options.lagMs === undefined ? undefined : await startLaggingLink(primary.port, options.lagMs);
  const replica = await startRedisServer({ args: ['--replicaof', HOST, String(link?.port ?? primary.port)] });
  const stop = async () => {
    await link?.close();
    await Promise.all([primary.stop(), replica.stop()]);
  };
  try {
    await waitUntil('the replica to sync', async () => (await linkUp(replica.port)) && (await streaming(primary.port, replica.port)));
    return { primary, replica, replicaPid: await serverPid(replica.port), link, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A new replica of the server on primaryPort, synced (what replaces a lost machine). */
export async function startReplicaOf(primaryPort: number): Promise<RedisServer> {
  const replica = await startRedisServer({ args: ['--replicaof', HOST, String(primaryPort)] });
  try {
    await waitUntil('the new replica to sync', async () => (await linkUp(replica.port)) && (await streaming(primaryPort, replica.port)));
    return replica;
  } catch (error) {
    await replica.stop();
    throw error;
  }
}

export interface ReplicatedCluster {
  /** Seed nodes for the clients: the masters. */
  nodes: { host: '127.0.0.1'; port: number }[];
  /** Each master's port, and the pid of its replica. */
  replicaPidOf: Map<number, number>;
  stop(): Promise<void>;
}

function redisCli(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', args, { timeout: 60_000 }, (error, stdout, stderr) =>
      error === null ? resolve(stdout) : reject(new Error(`redis-cli ${args.join(' ')}: ${error.message}\n${stdout}${stderr}`)),
    );
  });
}

async function startClusterNode(taken: Set<number>): Promise<RedisServer> {
  for (let attempt = 1; ; attempt++) {
    // Below Linux's ephemeral range, with the bus port (+10000) free too.
    const port = randomInt(15_000, 22_000);
    if (taken.has(port) || !(await isPortFree(port)) || !(await isPortFree(port + 10_000))) continue;
    taken.add(port);
    try {
      return await startRedisServer({
        port,
        // A stopped replica must not look like a failed node for the test's few seconds.
        args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '30000', '--repl-diskless-sync-delay', '0'],
      });
    } catch (error) {
      if (!(error instanceof PortInUseError) || attempt >= 5) throw error;
    }
  }
}

/** Three masters with one replica each (redis-cli --cluster create --cluster-replicas 1). */
export async function startReplicatedCluster(): Promise<ReplicatedCluster> {
  const servers: RedisServer[] = [];
  const stop = async () => void (await Promise.all(servers.map((server) => server.stop())));
  try {
    const taken = new Set<number>();
    for (let i = 0; i < 6; i++) servers.push(await startClusterNode(taken));
    await redisCli(['--cluster', 'create', ...servers.map((s) => `${HOST}:${s.port}`), '--cluster-replicas', '1', '--cluster-yes']);
    const replicaPidOf = new Map<number, number>();
    await waitUntil(
      'the cluster to settle with a synced replica per master',
      async () => {
        const infos = await Promise.all(servers.map((s) => rawCommand(s.port, ['CLUSTER', 'INFO'])));
        if (!infos.every((info) => /cluster_state:ok/.test(String(info)) && /cluster_known_nodes:6/.test(String(info)))) return false;
        const lines = String(await rawCommand(servers[0]!.port, ['CLUSTER', 'NODES']))
          .trim()
          .split('\n');
        const portOfId = new Map(
          lines.map((line) => {
            const [id, address] = line.split(' ');
            return [id!, Number(/:(\d+)@/.exec(address!)![1])];
          }),
        );
        // A key each master serves, to see writes reach its replica.
        const slots = (await rawCommand(servers[0]!.port, ['CLUSTER', 'SLOTS'])) as [number, number, [string, number]][];
        const probeOf = (port: number) => {
          const [from, to] = slots.find((range) => range[2][1] === port)!;
          for (let n = 0; ; n++) if (keySlot(`probe{${n}}`) >= from && keySlot(`probe{${n}}`) <= to) return `probe{${n}}`;
        };
        replicaPidOf.clear();
        for (const line of lines) {
          const [, address, flags, masterId] = line.split(' ');
          if (!flags!.includes('slave')) continue;
          const port = Number(/:(\d+)@/.exec(address!)![1]);
          const masterPort = portOfId.get(masterId!)!;
          if (!(await linkUp(port)) || !(await streaming(masterPort, port, probeOf(masterPort)))) return false;
          replicaPidOf.set(masterPort, await serverPid(port));
        }
        return replicaPidOf.size === 3;
      },
      60_000,
    );
    const masters = [...replicaPidOf.keys()];
    return { nodes: masters.map((port) => ({ host: HOST, port })), replicaPidOf, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * A client that reconnects quickly and queues nothing while its server is down: a command
 * then fails at once instead of running later, after its caller was told "unavailable".
 * ioredis never resends a command whose reply was lost (autoResendUnfulfilledCommands off).
 */
export function connectFailFast(kind: ClientKind, port: number): Promise<TestClient> {
  return connectClient(kind, `redis://${HOST}:${port}`, { offlineQueue: false });
}

/** A cluster client of either kind, seeded with the masters. */
export async function connectCluster(kind: ClientKind, nodes: { host: string; port: number }[]): Promise<TestClient> {
  if (kind === 'node-redis') {
    const cluster = createCluster({ rootNodes: nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
    cluster.on('error', () => {});
    await cluster.connect();
    return {
      kind,
      topology: 'cluster',
      adapter: fromNodeRedis(cluster),
      command: (args) => cluster.sendCommand(args[1], false, args),
      close: async () => void (await cluster.close()),
    };
  }
  const cluster = new Cluster(nodes, { lazyConnect: true, redisOptions: { maxRetriesPerRequest: 1 } });
  cluster.on('error', () => {});
  await cluster.connect();
  return {
    kind,
    topology: 'cluster',
    adapter: fromIoredis(cluster),
    command: (args) => cluster.call(args[0]!, ...args.slice(1)),
    close: async () => void (await cluster.quit()),
  };
}
