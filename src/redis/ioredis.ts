import type { RedisScriptClient } from "./client.ts";

/** The part of an ioredis `Redis` or `Cluster` used here. */
export interface IoredisLike {
  evalsha(sha1: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
}

/** Adapts an ioredis client or cluster; the cluster routes each call by its first key. */
export function fromIoredis(client: IoredisLike): RedisScriptClient {
  return {
    evalsha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
    eval: (source, keys, args) => client.eval(source, keys.length, ...keys, ...args),
  };
}
