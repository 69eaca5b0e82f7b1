// One Redis for the whole run, found in this order: REDIS_URL, a redis-server we start on a
// free port, a container when a Docker engine answers. Tests read the URL with redisUrl().
// The `cluster` project (test/vitest.config.ts) gets a Redis Cluster instead: the one named by
// REDIS_CLUSTER_NODES, else 3 local masters we start; tests reach it through helpers/tollgate.ts.
import { execFile } from 'node:child_process';
import type { TestProject } from 'vitest/node';
import { startRedisCluster } from './cluster.ts';
import { REDIS_SERVER_MISSING, startRedisServer } from './redisServer.ts';

export interface ClusterNode {
  host: string;
  port: number;
}

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    /** Seed nodes of the Redis Cluster; only in the `cluster` project. */
    redisCluster?: ClusterNode[];
  }
}

/** Name of the vitest project whose files run against a Redis Cluster. */
export const CLUSTER_PROJECT = 'cluster';

// Same major line as Debian's redis-server package; tollgate needs Redis >= 7.0.
const CONTAINER_IMAGE = 'redis:7.0-alpine';

function succeeds(command: string, args: string[], timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs }, (error) => resolve(error === null));
  });
}

function onPath(command: string): Promise<boolean> {
  return succeeds('sh', ['-c', `command -v ${command}`], 5_000);
}

/** REDIS_CLUSTER_NODES=host:port,host:port,... (any reachable masters of one cluster). */
function nodesFromEnv(value: string): ClusterNode[] {
  return value.split(',').map((entry) => {
    const match = /^\s*([^:\s]+):(\d+)\s*$/.exec(entry);
    if (!match) throw new Error(`REDIS_CLUSTER_NODES: expected host:port,host:port,... but got "${value}"`);
    return { host: match[1]!, port: Number(match[2]) };
  });
}

async function setupCluster(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const fromEnv = process.env.REDIS_CLUSTER_NODES;
  if (fromEnv) {
    project.provide('redisCluster', nodesFromEnv(fromEnv));
    return undefined;
  }
  if (!(await onPath('redis-server'))) {
    throw new Error(
      `The cluster tests start a local Redis Cluster and need redis-server and redis-cli. ${REDIS_SERVER_MISSING} Or set REDIS_CLUSTER_NODES=host:port,... to use a running cluster.`,
    );
  }
  const cluster = await startRedisCluster();
  project.provide('redisCluster', cluster.nodes);
  return () => cluster.stop();
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (project.name === CLUSTER_PROJECT) return setupCluster(project);
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
