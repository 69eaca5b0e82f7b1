// What test files need to reach the Redis started by globalSetup.ts.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { inject } from 'vitest';

/** URL of the Redis shared by every test file of this run (REDIS_URL or one we started). */
export function redisUrl(): string {
  return inject('redisUrl');
}

/**
 * A key prefix of this test file's own: files share one Redis and run in parallel, so every
 * key a test writes starts with it. Hash tags are left to the caller.
 */
export function uniquePrefix(name: string): string {
  return `t:${name}:${randomBytes(4).toString('hex')}`;
}

/** A connected node-redis client; the caller closes it (`await client.close()`). */
export async function connectNodeRedis(url: string = redisUrl()) {
  const client = createClient({ url });
  // Without a listener, a dropped connection would crash the worker; commands still reject.
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** A connected ioredis client; the caller closes it (`await client.quit()`). */
export async function connectIoredis(url: string = redisUrl()): Promise<Redis> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  await client.connect();
  return client;
}
