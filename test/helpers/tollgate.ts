// A tollgate on the test Redis with an injected clock, through either client (both
// node-redis and ioredis are supported, so core tests run through both). In the `cluster`
// project (test/vitest.config.ts) the same helpers connect to a Redis Cluster instead, so the
// same test files run unchanged against cluster key routing. The public-API files also run
// each test in memory (backends(): createTollgate({ memory: true }) with the same clock).
import { Cluster, type Redis } from 'ioredis';
import { createCluster } from 'redis';
import { inject } from 'vitest';
import { createTollgate, fromIoredis, fromNodeRedis, type RedisScriptClient, type Tollgate, type TollgateOptions } from '../../src/index.ts';
import type { ClusterNode } from './globalSetup.ts';
import { connectIoredis, connectNodeRedis, redisUrl, uniquePrefix } from './redis.ts';
import { EXAMPLE_PLANS } from './plans.ts';

export const CLIENT_KINDS = ['node-redis', 'ioredis'] as const;
export type ClientKind = (typeof CLIENT_KINDS)[number];

/** Where a tollgate under test keeps its state: Redis through either client, or this process's memory. */
export type Backend = ClientKind | 'memory';

/**
 * The backends a public-API test file runs against: both Redis clients and memory (the same
 * tests, the same expectations). The cluster project runs the Redis ones only: memory has no
 * key routing to prove.
 */
export function backends(): Backend[] {
  return clusterNodes() ? [...CLIENT_KINDS] : [...CLIENT_KINDS, 'memory'];
}

/** Tests move time by hand; nothing sleeps. */
export const TEST_START = Date.UTC(2026, 0, 15, 12, 0, 0);

export class ManualClock {
  constructor(public now: number = TEST_START) {}
  advance(ms: number): number {
    this.now += ms;
    return this.now;
  }
  set(ms: number): number {
    this.now = ms;
    return this.now;
  }
  readonly fn = (): number => this.now;
}

export interface TestGate {
  tg: Tollgate;
  clock: ManualClock;
  prefix: string;
  /** Where the tollgate keeps its state. */
  backend: Backend;
  /** Whether it is on Redis (false: memory, where `command` has nothing to send to). */
  onRedis: boolean;
  /** Raw commands for assertions on stored state (routed by key on a cluster). */
  command(args: string[]): Promise<unknown>;
  close(): Promise<void>;
}

/** Where a test client connects: one server by URL, or a cluster by its seed nodes. */
export type RedisTarget = { url: string } | { cluster: ClusterNode[] };

/** The cluster of this run's `cluster` project, or undefined in the standalone project. */
export function clusterNodes(): ClusterNode[] | undefined {
  return inject('redisCluster') ?? undefined;
}

/** The Redis this test file runs against: the project's cluster, else the shared server. */
export function defaultTarget(): RedisTarget {
  const nodes = clusterNodes();
  return nodes ? { cluster: nodes } : { url: redisUrl() };
}

/** One connected client of either kind and topology, seen through what the tests need. */
export interface TestClient {
  kind: ClientKind;
  topology: 'standalone' | 'cluster';
  /** For createTollgate({ plans: EXAMPLE_PLANS, redis }). */
  adapter: RedisScriptClient;
  /**
   * A raw command. On a cluster, a command with a key goes to the key's node (the key is the
   * first argument after the command name, as for every command the tests send); commands
   * without a key (KEYS, SCRIPT, DBSIZE, ...) go to every master and the replies are merged.
   */
  command(args: string[]): Promise<unknown>;
  close(): Promise<void>;
}

// Commands with no key: sent to every master of a cluster.
const KEYLESS = new Set(['KEYS', 'SCAN', 'SCRIPT', 'FUNCTION', 'DBSIZE', 'FLUSHALL', 'FLUSHDB', 'PING', 'INFO', 'CONFIG', 'CLUSTER', 'TIME', 'DEBUG']);

function mergeReplies(args: string[], replies: unknown[]): unknown {
  const name = args[0]!.toUpperCase();
  if (name === 'KEYS') return replies.flatMap((r) => r as unknown[]);
  if (name === 'DBSIZE') return replies.reduce((sum: number, r) => sum + Number(r), 0);
  // SCRIPT EXISTS: a script counts as cached when some master has it (each node has its own cache).
  if (name === 'SCRIPT' && args[1]?.toUpperCase() === 'EXISTS') {
    return (replies[0] as number[]).map((_, i) => Math.max(...replies.map((r) => Number((r as unknown[])[i]))));
  }
  return replies[0];
}

function isKeyless(args: string[]): boolean {
  return args.length < 2 || KEYLESS.has(args[0]!.toUpperCase());
}

export async function connectTestClient(kind: ClientKind, target: RedisTarget = defaultTarget()): Promise<TestClient> {
  if ('url' in target) {
    if (kind === 'node-redis') {
      const client = await connectNodeRedis(target.url);
      return {
        kind,
        topology: 'standalone',
        adapter: fromNodeRedis(client),
        command: (args) => client.sendCommand(args),
        close: async () => void (await client.close()),
      };
    }
    const client = await connectIoredis(target.url);
    return {
      kind,
      topology: 'standalone',
      adapter: fromIoredis(client),
      command: (args) => client.call(args[0]!, ...args.slice(1)),
      close: async () => void (await client.quit()),
    };
  }
  if (kind === 'node-redis') {
    const cluster = createCluster({ rootNodes: target.cluster.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
    // Without a listener, a dropped connection would crash the worker; commands still reject.
    cluster.on('error', () => {});
    await cluster.connect();
    return {
      kind,
      topology: 'cluster',
      adapter: fromNodeRedis(cluster),
      async command(args) {
        if (!isKeyless(args)) return cluster.sendCommand(args[1], false, args);
        const clients = await Promise.all(cluster.masters.map((master) => cluster.nodeClient(master)));
        return mergeReplies(args, await Promise.all(clients.map((client) => client.sendCommand(args))));
      },
      close: async () => void (await cluster.close()),
    };
  }
  const cluster = new Cluster(target.cluster, { lazyConnect: true, redisOptions: { maxRetriesPerRequest: 1 } });
  cluster.on('error', () => {});
  await cluster.connect();
  return {
    kind,
    topology: 'cluster',
    adapter: fromIoredis(cluster),
    async command(args) {
      if (!isKeyless(args)) return cluster.call(args[0]!, ...args.slice(1));
      const masters: Redis[] = cluster.nodes('master');
      return mergeReplies(args, await Promise.all(masters.map((node) => node.call(args[0]!, ...args.slice(1)))));
    },
    close: async () => void (await cluster.quit()),
  };
}

/**
 * A tollgate for one test file under a prefix of its own. Without `url` it runs against the
 * project's Redis: the shared server, or in the `cluster` project the cluster.
 */
export async function openTollgate(kind: Backend, name: string, options: Partial<TollgateOptions> = {}, url?: string): Promise<TestGate> {
  const clock = new ManualClock();
  const prefix = uniquePrefix(name);
  if (kind === 'memory') {
    return {
      tg: createTollgate({ memory: true, plans: EXAMPLE_PLANS, clock: clock.fn, ...options }),
      clock,
      prefix,
      backend: kind,
      onRedis: false,
      command: async () => {
        throw new Error('A tollgate in memory has no Redis to send a command to');
      },
      close: async () => {},
    };
  }
  const client = await connectTestClient(kind, url === undefined ? defaultTarget() : { url });
  return {
    tg: createTollgate({ redis: client.adapter, plans: EXAMPLE_PLANS, prefix, clock: clock.fn, ...options }),
    clock,
    prefix,
    backend: kind,
    onRedis: true,
    command: (args) => client.command(args),
    close: () => client.close(),
  };
}

let sequence = 0;
/** A fresh account id per test. */
export function accountId(label = 'acct'): string {
  sequence += 1;
  return `${label}_${process.pid}_${sequence}`;
}

/** Creates an account on `plan` under a fresh id (accountId) and returns the id. */
export async function newAccount(tg: Pick<Tollgate, 'accounts'>, plan: string): Promise<string> {
  const id = accountId();
  await tg.accounts.create(id, { plan });
  return id;
}
