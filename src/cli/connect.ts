/**
 * The operator CLI's connection: node-redis when the project has it installed, else ioredis
 * (or the one --client names), to one server or (with --cluster) to a Redis Cluster seeded by
 * the URL. Besides the adapter tollgate runs its scripts through (which also lists accounts on
 * every master), the CLI sends plain commands routed by their key (XRANGE over a journal).
 */
import { fromIoredis, fromNodeRedis, type RedisScriptClient } from '../index.ts';

export interface Connection {
  /** For createTollgate({ redis }). */
  redis: RedisScriptClient;
  /** One command, sent to the server that owns `key`. */
  command(key: string, words: string[]): Promise<unknown>;
  close(): Promise<void>;
}

/** The client packages the CLI can use. */
export type ClientName = 'node-redis' | 'ioredis';

/** Connects with the client asked for, else whichever is installed (node-redis first). */
export async function connect(url: string, cluster: boolean, client?: ClientName): Promise<Connection> {
  const nodeRedis = client === 'ioredis' ? undefined : await optional<typeof import('redis')>('redis');
  if (nodeRedis) return cluster ? nodeRedisCluster(nodeRedis, url) : nodeRedisServer(nodeRedis, url);
  const ioredis = client === 'node-redis' ? undefined : await optional<typeof import('ioredis')>('ioredis');
  if (ioredis) return cluster ? ioredisCluster(ioredis, url) : ioredisServer(ioredis, url);
  throw new Error(
    `the tollgate CLI needs ${client === 'ioredis' ? 'the ioredis package' : client === 'node-redis' ? 'the redis (node-redis) package' : 'the redis (node-redis) or ioredis package'} installed beside it`,
  );
}

async function optional<T>(name: string): Promise<T | undefined> {
  try {
    return (await import(name)) as T;
  } catch {
    return undefined;
  }
}

// The connection failing must not end the CLI's process unannounced: the command fails instead.
const ignore = () => {};

async function nodeRedisServer(redis: typeof import('redis'), url: string): Promise<Connection> {
  const client = redis.createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: false, connectTimeout: 5_000 } }).on('error', ignore);
  await client.connect();
  return {
    redis: fromNodeRedis(client),
    command: (_key, words) => client.sendCommand(words),
    close: async () => void (await client.close()),
  };
}

async function nodeRedisCluster(redis: typeof import('redis'), url: string): Promise<Connection> {
  const cluster = redis
    .createCluster({ rootNodes: [{ url }], defaults: { disableOfflineQueue: true, socket: { reconnectStrategy: false, connectTimeout: 5_000 } } })
    .on('error', ignore);
  await cluster.connect();
  return {
    redis: fromNodeRedis(cluster),
    command: (key, words) => cluster.sendCommand(key, true, words),
    close: async () => void (await cluster.close()),
  };
}

async function ioredisServer(ioredis: typeof import('ioredis'), url: string): Promise<Connection> {
  const client = new ioredis.Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null }).on(
    'error',
    ignore,
  );
  await client.connect();
  return {
    redis: fromIoredis(client),
    command: (_key, words) => client.call(words[0]!, ...words.slice(1)),
    close: async () => void (await client.quit()),
  };
}

async function ioredisCluster(ioredis: typeof import('ioredis'), url: string): Promise<Connection> {
  const { hostname, port } = new URL(url);
  const cluster = new ioredis.Cluster([{ host: hostname, port: Number(port || 6379) }], { lazyConnect: true, enableOfflineQueue: false }).on('error', ignore);
  await cluster.connect();
  return {
    redis: fromIoredis(cluster),
    command: (_key, words) => cluster.call(words[0]!, ...words.slice(1)),
    close: async () => void (await cluster.quit()),
  };
}
