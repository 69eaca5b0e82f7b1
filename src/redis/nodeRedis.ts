import { ADAPTED, sharedReconnects, warnWithoutErrorListener, type DedicatedConnection, type RedisScriptClient } from './client.ts';
import { asError, clusterConnection, splitAddress, standaloneConnection, type NodeConnection } from './dedicated.ts';

/** The part of a node-redis client (`createClient`) used here. */
export interface NodeRedisClientLike {
  /** Sends one command given as its words. */
  sendCommand(args: string[], options?: unknown): Promise<unknown>;
}

/** The part of a node-redis cluster (`createCluster`) used here. */
export interface NodeRedisClusterLike {
  /** Sends one command to the node of its first key. */
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[], options?: unknown): Promise<unknown>;
  /** The cluster's masters: what tells a cluster from a client. */
  masters: unknown;
}

/** A node-redis client (`createClient`) or cluster (`createCluster`), redis 4 to 6. */
export type NodeRedisLike = NodeRedisClientLike | NodeRedisClusterLike;

/** What durability uses of a client beyond sendCommand: a copy of it, connected and closed by tollgate. */
interface Duplicable extends NodeRedisClientLike {
  duplicate(overrides?: object): Connectable;
  readonly options?: { socket?: object };
}

interface Connectable extends NodeRedisClientLike {
  connect(): Promise<unknown>;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy?(): unknown;
}

interface ClusterNode {
  host: string;
  port: number;
}

/** What durability uses of a cluster (node-redis >= 4.6): its slot map and a client per node. */
interface ClusterWithNodes extends NodeRedisClusterLike {
  masters: ClusterNode[];
  readonly slots: ReadonlyArray<{ master: ClusterNode } | undefined>;
  nodeClient(node: ClusterNode): Promise<Duplicable> | Duplicable;
}

function isCluster(client: NodeRedisLike): client is NodeRedisClusterLike {
  return 'masters' in client && Array.isArray((client as { masters?: unknown }).masters);
}

/**
 * node-redis (5 and later) arms an AbortSignal timer and listener for every command by
 * default, about 4 µs of client CPU per call; tollgate times each call itself (timeoutMs), so
 * its commands go without. One shared object, so nothing is allocated per call.
 */
const NO_TIMEOUT = Object.freeze({ timeout: 0 });

/** A user's client-side cache stays with the user's connections. */
const OWN_CONNECTION = Object.freeze({ clientSideCache: undefined });

/**
 * Adapts a node-redis client or cluster (redis 4 to 6) for createTollgate. Commands go
 * through sendCommand as they are; a cluster routes each by its first key, and the function
 * library by the key of the call that found it missing. Durable movements
 * get connections of their own, copies of the client (duplicate), one per master on a cluster.
 * Warns once (TOLLGATE_NO_ERROR_LISTENER) when the client has no 'error' listener.
 */
export function fromNodeRedis(client: NodeRedisLike): RedisScriptClient {
  warnWithoutErrorListener(client, 'fromNodeRedis');
  if (isCluster(client)) {
    const withNodes = 'slots' in client && typeof (client as Partial<ClusterWithNodes>).nodeClient === 'function';
    return {
      [ADAPTED]: true,
      send: (words) => client.sendCommand(words[3], false, words, NO_TIMEOUT),
      load: (library, routingKey) => client.sendCommand(routingKey, false, ['FUNCTION', 'LOAD', 'REPLACE', library], NO_TIMEOUT),
      ...(withNodes && {
        dedicated: async () => clusterDedicated(client as ClusterWithNodes),
        servers: async () => {
          const cluster = client as ClusterWithNodes;
          const nodes = await Promise.all(cluster.masters.map((master) => cluster.nodeClient(master)));
          return nodes.map((node) => (words: string[]) => (node as unknown as NodeRedisClientLike).sendCommand(words, NO_TIMEOUT));
        },
      }),
      ...(withNodes && { everyMaster: (words: string[]) => onEveryMaster(client as ClusterWithNodes, words) }),
      onReconnect: reconnectsOf(client, 'node-ready'),
    } as RedisScriptClient;
  }
  const duplicable = typeof (client as Partial<Duplicable>).duplicate === 'function';
  return {
    [ADAPTED]: true,
    send: (words) => client.sendCommand(words, NO_TIMEOUT),
    everyMaster: async (words) => [{ server: addressOf(client), reply: await client.sendCommand(words, NO_TIMEOUT) }],
    onReconnect: reconnectsOf(client, 'ready'),
    load: (library) => client.sendCommand(['FUNCTION', 'LOAD', 'REPLACE', library], NO_TIMEOUT),
    ...(duplicable && { dedicated: async () => standaloneConnection(await openCopy(client as Duplicable, OWN_CONNECTION)) }),
  } as RedisScriptClient;
}

/** The command on every master of the cluster, each reply with the master's address. */
async function onEveryMaster(cluster: ClusterWithNodes, words: string[]): Promise<Array<{ server: string; reply: unknown }>> {
  return Promise.all(
    cluster.masters.map(async (master) => ({
      server: `${master.host}:${master.port}`,
      reply: await (await cluster.nodeClient(master)).sendCommand(words, NO_TIMEOUT),
    })),
  );
}

/** Subscribes to the client's event of a (re)established connection, where it has events. */
function reconnectsOf(client: NodeRedisLike, event: string): (listener: () => void) => void {
  return sharedReconnects(client, (fire) => {
    const events = client as { on?: (event: string, listener: () => void) => unknown };
    if (typeof events.on === 'function') events.on(event, fire);
  });
}

/** The server a client connects to, as "host:port" where its options say. */
function addressOf(client: NodeRedisLike): string {
  const options = (client as { options?: { url?: string; socket?: { host?: string; port?: number } } }).options;
  const socket = options?.socket;
  if (socket?.host !== undefined || socket?.port !== undefined) return `${socket.host ?? 'localhost'}:${socket.port ?? 6379}`;
  return options?.url ?? 'the Redis server';
}

function clusterDedicated(cluster: ClusterWithNodes): DedicatedConnection {
  const address = (node: ClusterNode) => `${node.host}:${node.port}`;
  return clusterConnection({
    masterOf(slot) {
      const master = cluster.slots[slot]?.master;
      return master && address(master);
    },
    async open(target) {
      const known = cluster.masters.find((master) => address(master) === target);
      const source = await cluster.nodeClient(known ?? cluster.masters[0]!);
      // A node the user's client does not know yet (a MOVED ahead of its slot map): the same
      // options, another address.
      return openCopy(source, known ? OWN_CONNECTION : { ...OWN_CONNECTION, socket: { ...source.options?.socket, ...splitAddress(target) } });
    },
  });
}

async function openCopy(source: Duplicable, overrides: object): Promise<NodeConnection> {
  const copy = source.duplicate(overrides);
  // Failures reach the commands; an 'error' event nobody listens to would end the process.
  copy.on('error', () => {});
  try {
    await copy.connect();
  } catch (error) {
    copy.destroy?.();
    throw error;
  }
  return {
    // Sent in one tick, so node-redis writes them together and the server runs them in order.
    pipeline: (commands) => Promise.all(commands.map((words) => copy.sendCommand(words, NO_TIMEOUT).catch(asError))),
    async close() {
      try {
        await (copy.close ?? copy.quit)!.call(copy);
      } catch {
        copy.destroy?.();
      }
    },
  };
}
