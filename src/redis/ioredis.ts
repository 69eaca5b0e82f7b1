import { ADAPTED, type RedisScriptClient } from "./client.ts";

/** The part of an ioredis `Redis` or `Cluster` used here. */
export interface IoredisLike {
  /** Sends one command by name with its arguments (ioredis `call`). */
  call(command: string, ...args: string[]): Promise<unknown>;
}

/** Adapts an ioredis client or cluster (ioredis >= 5); the cluster routes each call by its keys. */
export function fromIoredis(client: IoredisLike): RedisScriptClient {
  return {
    [ADAPTED]: true,
    send: (words: string[]) => client.call(words[0]!, ...words.slice(1)),
  } as RedisScriptClient;
}
