/**
 * The Redis the example servers keep their own records in (the job store), on one server or a
 * Redis Cluster, seen through the few commands they need.
 *
 * docs/example-service.md#errors (fail closed, promptly): every call has a deadline, and a Redis that is down, paused
 * or slower than the deadline fails the call with tollgate's StoreUnavailableError, which the
 * servers answer with 503 unavailable. The client keeps no offline queue, so a command issued
 * while the connection is down fails at once instead of running after its request was told
 * 503. Tollgate runs its scripts on the same client (`scripts`).
 */
import {
  ClientClosedError,
  ClientOfflineError,
  ConnectionTimeoutError,
  DisconnectsClientError,
  ErrorReply,
  MaxCommandRedirectionsError,
  ReconnectStrategyError,
  RootNodesUnavailableError,
  SocketClosedUnexpectedlyError,
  SocketTimeoutError,
  TimeoutError,
  createClient,
  createCluster,
} from 'redis';
import { fromNodeRedis, type RedisScriptClient } from 'tollgate';
import { StoreUnavailableError } from 'tollgate/errors';

export interface ClusterNode {
  host: string;
  port: number;
}

/** One server by URL, or a cluster by any of its masters. */
export type RedisTarget = { url: string } | { clusterNodes: ClusterNode[] };

/** `host:port,host:port,...` (REDIS_CLUSTER_NODES) as cluster seed nodes. */
export function parseClusterNodes(value: string): ClusterNode[] {
  return value.split(',').map((entry) => {
    const match = /^\s*([^\s:]+):(\d{1,5})\s*$/.exec(entry);
    if (!match) throw new Error(`REDIS_CLUSTER_NODES must read host:port,host:port,... but got "${value}"`);
    return { host: match[1]!, port: Number(match[2]) };
  });
}

export function describeTarget(target: RedisTarget): string {
  return 'url' in target ? target.url : `cluster ${target.clusterNodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
}

type Command = [name: string, key: string, ...args: string[]];

export interface AppRedis {
  /** For createTollgate({ redis }): tollgate's scripts run on the same connection(s). */
  readonly scripts: RedisScriptClient;
  hGetAll(key: string): Promise<Record<string, string>>;
  get(key: string): Promise<string | null>;
  /** True when the value was set (false only with `NX` and the key present). */
  set(key: string, value: string, options: { EX?: number; PX?: number; NX?: boolean }): Promise<boolean>;
  /** On a cluster the keys must share a hash tag. */
  del(keys: string[]): Promise<number>;
  incr(key: string): Promise<number>;
  expire(key: string, seconds: number): Promise<void>;
  lIndex(key: string, index: number): Promise<string | null>;
  lLen(key: string): Promise<number>;
  lRange(key: string, start: number, stop: number): Promise<string[]>;
  /** Writes applied together (MULTI/EXEC); on a cluster every key must share a hash tag. */
  atomically(commands: Command[]): Promise<void>;
  close(): Promise<void>;
}

// Reconnect quickly, but never faster than every 500 ms once it keeps failing.
const reconnectStrategy = (retries: number) => Math.min(50 * 2 ** retries, 500);

/**
 * node-redis (6) gives every command a 5 s timeout by default, armed with AbortSignal.timeout:
 * its timer runs the full 5 s even when the reply came in a millisecond, then aborts the signal
 * with a TimeoutError nobody reads. Under load that is thousands of timers and signals alive at
 * once; they outlive the young generation, the old one fills with them, and the server's RSS
 * climbs by a hundred MB and more before the first full GC. Every call here has its deadline
 * already (withDeadline), as tollgate's have theirs (fromNodeRedis sends timeout: 0), so the
 * client arms none. (MULTI never takes a timeout.)
 */
const commandOptions = { timeout: 0 };

export async function connectRedis(target: RedisTarget, timeoutMs: number): Promise<AppRedis> {
  const socket = { connectTimeout: Math.max(timeoutMs, 1_000), reconnectStrategy };
  if ('url' in target) {
    const client = createClient({ url: target.url, disableOfflineQueue: true, socket, commandOptions });
    // Commands reject while the connection is down; without a listener an error would crash the process.
    client.on('error', () => {});
    await client.connect();
    return build(
      {
        send: (_key, args) => client.sendCommand(args),
        multi: async (commands) => {
          const multi = client.multi();
          for (const [name, ...args] of commands) multi.addCommand([name, ...args]);
          await multi.exec();
        },
        close: async () => void (await client.close().catch(() => client.destroy())),
      },
      fromNodeRedis(client),
      timeoutMs,
    );
  }
  const cluster = createCluster({
    rootNodes: target.clusterNodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })),
    defaults: { disableOfflineQueue: true, socket },
    commandOptions,
  });
  cluster.on('error', () => {});
  await cluster.connect();
  return build(
    {
      send: (key, args) => cluster.sendCommand(key, false, args),
      multi: async (commands) => {
        const multi = cluster.multi(commands[0]![1]);
        for (const [name, key, ...args] of commands) multi.addCommand(key, false, [name, key, ...args]);
        await multi.exec();
      },
      close: async () => void (await cluster.close().catch(() => cluster.destroy())),
    },
    fromNodeRedis(cluster),
    timeoutMs,
  );
}

/** What differs between one server and a cluster: how a command finds its node. */
interface Transport {
  send(key: string, args: string[]): Promise<unknown>;
  multi(commands: Command[]): Promise<void>;
  close(): Promise<void>;
}

function build(transport: Transport, scripts: RedisScriptClient, timeoutMs: number): AppRedis {
  const send = (name: string, key: string, ...args: string[]) => withDeadline(`${name} ${key}`, timeoutMs, transport.send(key, [name, key, ...args]));
  return {
    scripts,
    hGetAll: async (key) => hashOf(await send('HGETALL', key)),
    get: async (key) => stringOrNull(await send('GET', key)),
    async set(key, value, options) {
      const args = [value];
      if (options.EX !== undefined) args.push('EX', String(options.EX));
      if (options.PX !== undefined) args.push('PX', String(options.PX));
      if (options.NX) args.push('NX');
      return (await send('SET', key, ...args)) !== null;
    },
    del: async (keys) => Number(await send('DEL', keys[0]!, ...keys.slice(1))),
    incr: async (key) => Number(await send('INCR', key)),
    expire: async (key, seconds) => void (await send('EXPIRE', key, String(seconds))),
    lIndex: async (key, index) => stringOrNull(await send('LINDEX', key, String(index))),
    lLen: async (key) => Number(await send('LLEN', key)),
    lRange: async (key, start, stop) => ((await send('LRANGE', key, String(start), String(stop))) as unknown[]).map(String),
    atomically: (commands) => withDeadline(`MULTI on ${commands[0]![1]}`, timeoutMs, transport.multi(commands)),
    close: () => transport.close(),
  };
}

function stringOrNull(reply: unknown): string | null {
  return reply === null || reply === undefined ? null : String(reply);
}

/** HGETALL replies as a flat array (RESP2), a Map or a plain object (RESP3). */
function hashOf(reply: unknown): Record<string, string> {
  const hash: Record<string, string> = {};
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) hash[String(reply[i])] = String(reply[i + 1]);
  } else if (reply instanceof Map) {
    for (const [field, value] of reply) hash[String(field)] = String(value);
  } else if (reply !== null && typeof reply === 'object') {
    for (const [field, value] of Object.entries(reply)) hash[field] = String(value);
  }
  return hash;
}

const CONNECTION_ERRORS = [
  ClientClosedError,
  ClientOfflineError,
  ConnectionTimeoutError,
  DisconnectsClientError,
  SocketClosedUnexpectedlyError,
  SocketTimeoutError,
  TimeoutError,
  ReconnectStrategyError,
  RootNodesUnavailableError,
  MaxCommandRedirectionsError,
];
// Replies of a server that is there but cannot serve now (loading, a cluster reconfiguring).
const BUSY_REPLY = /^(LOADING|BUSY|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|READONLY)\b/;

/** True when the error means Redis cannot be reached or cannot serve now (not a bug of ours). */
export function isRedisDown(error: unknown): boolean {
  if (CONNECTION_ERRORS.some((kind) => error instanceof kind)) return true;
  if (error instanceof ErrorReply) return BUSY_REPLY.test(error.message);
  if (!(error instanceof Error)) return false;
  // ioredis (BullMQ's client) says so by name or in words.
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'ClusterAllFailedError') return true;
  return /Connection is closed|Stream isn't writeable|enableOfflineQueue|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE/.test(error.message);
}

/**
 * The call's outcome, or StoreUnavailableError once `ms` pass without one or when Redis is
 * down. A late reply is dropped: the command may still run (a paused server runs what it had
 * read when it resumes), so what it does must be safe to do after its request was told 503.
 */
export function withDeadline<T>(what: string, ms: number, call: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new StoreUnavailableError(`Redis did not answer ${what} within ${ms} ms`)), ms);
    call.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        if (!isRedisDown(error)) return reject(error);
        const detail = error instanceof Error ? error.message : String(error);
        reject(new StoreUnavailableError(`Redis failed on ${what}: ${detail}`, { cause: error }));
      },
    );
  });
}
