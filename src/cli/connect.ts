/**
 * The operator CLI's connection: node-redis when the project has it installed, else ioredis
 * (or the one --client names), to one server or (with --cluster) to a Redis Cluster seeded by the URL. Besides the adapter
 * tollgate runs its scripts through, the CLI sends a few plain commands: one routed by its
 * key (XRANGE over a journal), and SCAN on every master.
 */
import { fromIoredis, fromNodeRedis, type RedisScriptClient } from '../index.ts';

export interface Connection {
  /** For createTollgate({ redis }). */
  redis: RedisScriptClient;
  /** One command, sent to the server that owns `key`. */
  command(key: string, words: string[]): Promise<unknown>;
  /** Every key matching `pattern` of type `type`, scanned on each master (a cluster) or the server. */
  scan(pattern: string, type: string): AsyncGenerator<string>;
  close(): Promise<void>;
}

/** A server-side command sender (one server, or one master of a cluster). */
type Send = (words: string[]) => Promise<unknown>;

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
  const send: Send = (words) => client.sendCommand(words);
  return {
    redis: fromNodeRedis(client),
    command: (_key, words) => send(words),
    scan: (pattern, type) => scanAll([send], pattern, type),
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
    async *scan(pattern, type) {
      const masters = await Promise.all(cluster.masters.map((master) => cluster.nodeClient(master)));
      yield* scanAll(
        masters.map((node) => (words: string[]) => node.sendCommand(words)),
        pattern,
        type,
      );
    },
    close: async () => void (await cluster.close()),
  };
}

async function ioredisServer(ioredis: typeof import('ioredis'), url: string): Promise<Connection> {
  const client = new ioredis.Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null }).on(
    'error',
    ignore,
  );
  await client.connect();
  const send: Send = (words) => client.call(words[0]!, ...words.slice(1));
  return {
    redis: fromIoredis(client),
    command: (_key, words) => send(words),
    scan: (pattern, type) => scanAll([send], pattern, type),
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
    scan: (pattern, type) =>
      scanAll(
        cluster.nodes('master').map((node) => (words: string[]) => node.call(words[0]!, ...words.slice(1))),
        pattern,
        type,
      ),
    close: async () => void (await cluster.quit()),
  };
}

/** SCAN with MATCH and TYPE on each server in turn, each key once. */
async function* scanAll(servers: Send[], pattern: string, type: string): AsyncGenerator<string> {
  for (const send of servers) {
    let cursor = '0';
    do {
      const [next, keys] = (await send(['SCAN', cursor, 'MATCH', pattern, 'COUNT', '1000', 'TYPE', type])) as [string, string[]];
      cursor = String(next);
      yield* keys.map(String);
    } while (cursor !== '0');
  }
}
