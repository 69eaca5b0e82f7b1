import { ADAPTED, sharedReconnects, warnWithoutErrorListener, type DedicatedConnection, type RedisScriptClient } from './client.ts';
import { asError, clusterConnection, splitAddress, standaloneConnection, type NodeConnection } from './dedicated.ts';

/** The part of an ioredis `Redis` or `Cluster` used here. */
export interface IoredisLike {
  /** Sends one command by name with its arguments (ioredis `call`). */
  call(command: string, ...args: string[]): Promise<unknown>;
}

/** What durability uses of an ioredis `Redis` beyond call: a copy of it, and pipelines. */
interface IoredisServer extends IoredisLike {
  readonly options: { host?: string; port?: number };
  readonly status?: string;
  duplicate(override?: object): IoredisServer;
  connect(): Promise<unknown>;
  on(event: 'error', listener: (error: unknown) => void): unknown;
  pipeline(): { call(command: string, ...args: string[]): unknown; exec(): Promise<Array<[Error | null, unknown]> | null> };
  quit(): Promise<unknown>;
  disconnect(): void;
}

/** What durability uses of an ioredis `Cluster`: its slot map and its masters. */
interface IoredisCluster extends IoredisLike {
  readonly isCluster: true;
  /** Per slot, "host:port" of the master first. */
  readonly slots: ReadonlyArray<readonly string[] | undefined>;
  nodes(role: 'master'): IoredisServer[];
}

function isCluster(client: IoredisLike): client is IoredisCluster {
  return (client as { isCluster?: unknown }).isCluster === true;
}

/**
 * Adapts an ioredis client or cluster (ioredis >= 5); the cluster routes each call by its keys,
 * and loads the function library on every master (a keyless command would go to any one).
 * Durable movements get connections of their own, copies of the client (duplicate), one per
 * master on a cluster. Warns once (TOLLGATE_NO_ERROR_LISTENER) when the client has no 'error'
 * listener.
 */
export function fromIoredis(client: IoredisLike): RedisScriptClient {
  warnWithoutErrorListener(client, 'fromIoredis');
  const cluster = isCluster(client);
  const canOpen = cluster ? typeof client.nodes === 'function' : typeof (client as Partial<IoredisServer>).duplicate === 'function';
  const load = (node: IoredisLike, library: string) => node.call('FUNCTION', 'LOAD', 'REPLACE', library);
  return {
    [ADAPTED]: true,
    send: (words: string[]) => client.call(words[0]!, ...words.slice(1)),
    load: cluster
      ? (library: string) => Promise.all((client as IoredisCluster).nodes('master').map((node) => load(node, library)))
      : (library: string) => load(client, library),
    ...(cluster && {
      servers: async () => (client as IoredisCluster).nodes('master').map((node) => (words: string[]) => node.call(words[0]!, ...words.slice(1))),
    }),
    ...(canOpen && {
      dedicated: async (): Promise<DedicatedConnection> =>
        cluster ? clusterDedicated(client as IoredisCluster) : standaloneConnection(await openCopy(client as IoredisServer)),
    }),
    everyMaster:
      cluster && typeof (client as IoredisCluster).nodes === 'function'
        ? (words: string[]) =>
            Promise.all(
              (client as IoredisCluster)
                .nodes('master')
                .map(async (node) => ({ server: addressOf(node), reply: await node.call(words[0]!, ...words.slice(1)) })),
            )
        : async (words: string[]) => [{ server: addressOf(client), reply: await client.call(words[0]!, ...words.slice(1)) }],
    onReconnect: sharedReconnects(client, (fire) => onReconnect(client, cluster, fire)),
  } as RedisScriptClient;
}

/** The server a client connects to, as "host:port" where its options say. */
function addressOf(client: IoredisLike): string {
  const options = (client as { options?: { host?: string; port?: number } }).options;
  return options?.host !== undefined || options?.port !== undefined ? `${options.host ?? 'localhost'}:${options.port ?? 6379}` : 'the Redis server';
}

/**
 * Calls listener on each reconnection: a server's "ready", or on a cluster a new node and each
 * node's "ready" after its first (a node's first connection is no reconnection).
 */
function onReconnect(client: IoredisLike, cluster: boolean, listener: () => void): void {
  type Events = { on?: (event: string, listener: (node?: Events) => void) => unknown };
  const events = client as Events;
  if (typeof events.on !== 'function') return;
  if (!cluster) {
    events.on('ready', listener);
    return;
  }
  events.on('+node', (node) => {
    listener();
    let connected = false;
    if (typeof node?.on === 'function') node.on('ready', () => (connected ? listener() : (connected = true)));
  });
}

function clusterDedicated(cluster: IoredisCluster): DedicatedConnection {
  const address = (node: IoredisServer) => `${node.options.host}:${node.options.port}`;
  return clusterConnection({
    masterOf: (slot) => cluster.slots[slot]?.[0],
    async open(target) {
      const masters = cluster.nodes('master');
      const known = masters.find((node) => address(node) === target);
      if (known) return openCopy(known);
      // A node the user's client does not know yet (a MOVED ahead of its slot map): the same
      // options, another address.
      if (masters[0] === undefined) throw new Error('The cluster client knows no master yet');
      return openCopy(masters[0], splitAddress(target));
    },
  });
}

async function openCopy(source: IoredisServer, override?: object): Promise<NodeConnection> {
  // Not lazy: the copy connects now, whatever the user's client does.
  const copy = source.duplicate({ ...override, lazyConnect: true });
  // Failures reach the commands; an 'error' event nobody listens to would end the process.
  copy.on('error', () => {});
  try {
    await copy.connect();
  } catch (error) {
    copy.disconnect();
    throw error;
  }
  return {
    // One pipeline: one write, and the server runs the commands in order.
    async pipeline(commands) {
      const pipeline = copy.pipeline();
      for (const [name, ...args] of commands) pipeline.call(name!, ...args);
      try {
        const replies = await pipeline.exec();
        if (replies === null) throw new Error('The pipeline was not run');
        return replies.map(([error, reply]) => error ?? reply);
      } catch (error) {
        return commands.map(() => asError(error));
      }
    },
    async close() {
      try {
        await copy.quit();
      } catch {
        copy.disconnect();
      }
    },
  };
}
