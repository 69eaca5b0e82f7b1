/** The node-redis client the example servers keep their own records in (keys, sessions, results). */
import { createClient } from 'redis';

export type AppRedis = Awaited<ReturnType<typeof connectRedis>>;

export async function connectRedis(url: string) {
  // Without the offline queue, commands fail at once while Redis is down, so requests fail
  // closed with 503 instead of hanging until it is back.
  const client = createClient({ url, disableOfflineQueue: true });
  // Commands reject while the connection is down; without a listener an error would crash the process.
  client.on('error', () => {});
  await client.connect();
  return client;
}
