import type { RedisScriptClient } from "./client.ts";

/** The part of a node-redis client or cluster (`createClient` / `createCluster`) used here. */
export interface NodeRedisLike {
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

/** Adapts a node-redis client or cluster; the cluster routes each call by its first key. */
export function fromNodeRedis(client: NodeRedisLike): RedisScriptClient {
  return {
    evalsha: (sha1, keys, args) => client.evalSha(sha1, { keys, arguments: args }),
    eval: (source, keys, args) => client.eval(source, { keys, arguments: args }),
  };
}
