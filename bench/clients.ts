/**
 * The two Redis clients a host may pass to tollgate, each wrapped once so every scenario can
 * run through either: the raw client for the floor and the peers, and the tollgate adapter.
 */
import { Redis } from "ioredis";
import { createClient } from "redis";
import { fromIoredis, fromNodeRedis, type RedisScriptClient } from "../src/index.ts";

export type ClientName = "node-redis" | "ioredis";
export const CLIENT_NAMES: readonly ClientName[] = ["node-redis", "ioredis"];

export interface BenchClient {
  name: ClientName;
  /** What createTollgate takes. */
  tollgate: RedisScriptClient;
  /** EVALSHA straight through the client, as a host calling Redis itself would. */
  evalsha(sha1: string, keys: string[], args: string[]): Promise<unknown>;
  /** Any command, e.g. SCRIPT LOAD or INFO. */
  command(args: string[]): Promise<unknown>;
  /** The client object itself, for peers that take one (rate-limiter-flexible). */
  raw: unknown;
  close(): Promise<void>;
}

export async function connect(name: ClientName, url: string): Promise<BenchClient> {
  if (name === "node-redis") {
    const client = createClient({ url });
    client.on("error", (error) => console.error(`node-redis: ${String(error)}`));
    await client.connect();
    return {
      name,
      tollgate: fromNodeRedis(client),
      evalsha: (sha1, keys, args) => client.evalSha(sha1, { keys, arguments: args }),
      command: (args) => client.sendCommand(args),
      raw: client,
      close: async () => {
        await client.close();
      },
    };
  }
  const client = new Redis(url, { lazyConnect: true });
  client.on("error", (error) => console.error(`ioredis: ${String(error)}`));
  await client.connect();
  return {
    name,
    tollgate: fromIoredis(client),
    evalsha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
    command: ([command, ...args]) => client.call(command!, ...args),
    raw: client,
    close: async () => {
      await client.quit();
    },
  };
}
