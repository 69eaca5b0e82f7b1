/**
 * The two Redis clients a host may pass to tollgate, each wrapped once so every scenario can
 * run through either: the raw client for the peers, and the tollgate adapter.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { fromIoredis, fromNodeRedis, type RedisScriptClient } from '../src/index.ts';

export type ClientName = 'node-redis' | 'ioredis';
export const CLIENT_NAMES: readonly ClientName[] = ['node-redis', 'ioredis'];

export interface BenchClient {
  name: ClientName;
  /**
   * What createTollgate takes. Its send() is also how the bench sends a script by raw EVALSHA
   * (the floor, a tollgate script, 0.1's reserveJob): the same path the library takes, so a
   * raw cell differs from the library's only by the library's own code.
   */
  tollgate: RedisScriptClient;
  /** Any command the way a host sends it (the client's defaults), e.g. INFO or SCRIPT LOAD. */
  command(args: string[]): Promise<unknown>;
  /** The client object itself, for peers that take one (rate-limiter-flexible). */
  raw: unknown;
  close(): Promise<void>;
}

export async function connect(name: ClientName, url: string): Promise<BenchClient> {
  if (name === 'node-redis') {
    const client = createClient({ url });
    client.on('error', (error) => console.error(`node-redis: ${String(error)}`));
    await client.connect();
    return {
      name,
      tollgate: fromNodeRedis(client),
      command: (args) => client.sendCommand(args),
      raw: client,
      close: async () => {
        await client.close();
      },
    };
  }
  const client = new Redis(url, { lazyConnect: true });
  client.on('error', (error) => console.error(`ioredis: ${String(error)}`));
  await client.connect();
  return {
    name,
    tollgate: fromIoredis(client),
    command: ([command, ...args]) => client.call(command!, ...args),
    raw: client,
    close: async () => {
      await client.quit();
    },
  };
}

/**
 * A client for createTollgate that hands every command's words to `seen` before sending them
 * through `inner`: how a scenario learns the exact command the library sends, to replay it by
 * raw EVALSHA. (It adapts a tiny ioredis-shaped object, so it needs nothing internal.)
 */
export function recording(inner: RedisScriptClient, seen: (words: string[]) => void): RedisScriptClient {
  return fromIoredis({
    call: (command: string, ...args: string[]) => {
      const words = [command, ...args];
      seen(words);
      return inner.send(words);
    },
  });
}
