/** The node-redis client the example servers keep their own records in (keys, sessions, results). */
import { createClient } from 'redis';

export type AppRedis = Awaited<ReturnType<typeof connectRedis>>;

export async function connectRedis(url: string) {
  const client = createClient({ url });
  // Commands reject while the connection is down; without a listener an error would crash the process.
  client.on('error', () => {});
  await client.connect();
  return client;
}
