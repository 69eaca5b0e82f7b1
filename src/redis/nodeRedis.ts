import { ADAPTED, type RedisScriptClient } from "./client.ts";

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

function isCluster(client: NodeRedisLike): client is NodeRedisClusterLike {
  return "masters" in client && Array.isArray((client as { masters?: unknown }).masters);
}

/**
 * node-redis (5 and later) arms an AbortSignal timer and listener for every command by
 * default, about 4 µs of client CPU per call; tollgate times each call itself (timeoutMs), so
 * its commands go without. One shared object, so nothing is allocated per call.
 */
const NO_TIMEOUT = Object.freeze({ timeout: 0 });

/**
 * Adapts a node-redis client or cluster (redis 4 to 6) for createTollgate. Commands go
 * through sendCommand as they are; a cluster routes each by its first key.
 */
export function fromNodeRedis(client: NodeRedisLike): RedisScriptClient {
  if (isCluster(client)) {
    return { [ADAPTED]: true, send: (words) => client.sendCommand(words[3], false, words, NO_TIMEOUT) } as RedisScriptClient;
  }
  return { [ADAPTED]: true, send: (words) => client.sendCommand(words, NO_TIMEOUT) } as RedisScriptClient;
}
