// One Redis for the whole run, found in this order: REDIS_URL, a redis-server we start on a
// free port, a container when a Docker engine answers. Tests read the URL with redisUrl().
import { execFile } from 'node:child_process';
import type { TestProject } from 'vitest/node';
import { REDIS_SERVER_MISSING, startRedisServer } from './redisServer.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

// Same major line as Debian's redis-server package; SPEC §1 asks for Redis >= 7.0.
const CONTAINER_IMAGE = 'redis:7.0-alpine';

function succeeds(command: string, args: string[], timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs }, (error) => resolve(error === null));
  });
}

function onPath(command: string): Promise<boolean> {
  return succeeds('sh', ['-c', `command -v ${command}`], 5_000);
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) {
    project.provide('redisUrl', fromEnv);
    return undefined;
  }

  if (await onPath('redis-server')) {
    const server = await startRedisServer();
    project.provide('redisUrl', server.url);
    return () => server.stop();
  }

  if (await succeeds('docker', ['info'], 5_000)) {
    // Only machines without redis-server need testcontainers, so it is loaded only here.
    const { RedisContainer } = await import('@testcontainers/redis');
    const container = await new RedisContainer(CONTAINER_IMAGE).start();
    project.provide('redisUrl', container.getConnectionUrl());
    return async () => {
      await container.stop();
    };
  }

  throw new Error(
    `The tests need a Redis and found none. ${REDIS_SERVER_MISSING} ` +
      'Or set REDIS_URL=redis://host:port to share a running Redis >= 7.0 (the tests of standalone ' +
      'and cluster helpers still need redis-server). No Docker engine answered either.',
  );
}
