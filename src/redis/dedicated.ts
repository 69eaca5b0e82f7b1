/**
 * What both adapters share for the connections of durable movements (client.ts,
 * DedicatedConnection): a cluster's slot of a key, and a set of connections of tollgate's own,
 * one per master, opened when a movement first needs that master. A movement's script and
 * its WAIT go on the one connection to the master that owns the script's key, so WAIT asks
 * the replicas of the master that ran the script; a MOVED or ASK (resharding, failover)
 * is followed once, both commands together.
 */
import type { DedicatedConnection } from './client.ts';

/** One connection of tollgate's own to one server. */
export interface NodeConnection {
  /** The commands back to back on this connection; a failed command answers with its Error. */
  pipeline(commands: string[][]): Promise<unknown[]>;
  close(): Promise<void>;
}

/** How a cluster adapter finds and opens masters, from the user's cluster client. */
export interface ClusterNodes {
  /** "host:port" of the master that serves the slot, as the user's client knows it now. */
  masterOf(slot: number): string | undefined;
  /** A new connection of tollgate's own to the server at "host:port". */
  open(address: string): Promise<NodeConnection>;
}

/** Turns a failed command into its reply slot: an Error, whatever was thrown. */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/** The dedicated connection of one server: routingKey plays no part. */
export function standaloneConnection(node: NodeConnection): DedicatedConnection {
  return { pipeline: (_routingKey, commands) => node.pipeline(commands), close: () => node.close() };
}

/** One connection per master, each opened when a movement first goes there. */
export function clusterConnection(nodes: ClusterNodes): DedicatedConnection {
  const open = new Map<string, Promise<NodeConnection>>();
  let closed = false;
  const node = (address: string): Promise<NodeConnection> => {
    if (closed) return Promise.reject(new Error('The durable connection was closed'));
    let connection = open.get(address);
    if (connection === undefined) {
      connection = nodes.open(address);
      open.set(address, connection);
      // A connection that could not be opened is tried afresh by the next movement.
      connection.catch(() => open.delete(address));
    }
    return connection;
  };
  return {
    async pipeline(routingKey, commands) {
      const slot = keySlot(routingKey);
      const address = nodes.masterOf(slot);
      if (address === undefined) throw new Error(`No master is known for slot ${slot}`);
      const replies = await (await node(address)).pipeline(commands);
      const redirect = redirection(replies[0]);
      if (redirect === undefined) return replies;
      const target = await node(redirect.address);
      if (!redirect.ask) return target.pipeline(commands);
      return (await target.pipeline([['ASKING'], ...commands])).slice(1);
    },
    async close() {
      closed = true;
      const connections = [...open.values()];
      open.clear();
      await Promise.all(
        connections.map((c) =>
          c.then(
            (n) => n.close(),
            () => undefined,
          ),
        ),
      );
    },
  };
}

/** A MOVED or ASK error reply: where the slot is served. */
function redirection(reply: unknown): { ask: boolean; address: string } | undefined {
  if (!(reply instanceof Error)) return undefined;
  const match = /^(MOVED|ASK) \d+ (\S+)$/.exec(reply.message);
  return match ? { ask: match[1] === 'ASK', address: match[2]! } : undefined;
}

/** "host:port" (the port after the last colon, so an IPv6 host keeps its own colons). */
export function splitAddress(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
}

const SLOTS = 16384;
const UTF8 = new TextEncoder();

/** The cluster slot of a key: CRC16 (XMODEM) of its hash tag, or of the whole key without one. */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of UTF8.encode(key)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % SLOTS;
}
