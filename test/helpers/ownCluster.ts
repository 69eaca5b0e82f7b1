// For test files that change a cluster's slots: a 3-master cluster of the file's own, and a
// client of each kind on it, opened and closed around the describe block that asks.
import { afterAll, beforeAll } from 'vitest';
import { startRedisCluster, type RedisClusterHandle } from './cluster.ts';
import { connectTestClient, type ClientKind, type TestClient } from './tollgate.ts';

/** Starts a cluster before the block's tests and stops it after; the getter gives it. */
export function ownCluster(): () => RedisClusterHandle {
  let cluster: RedisClusterHandle | undefined;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 60_000);
  afterAll(() => cluster?.stop());
  return () => cluster!;
}

/** Connects a client of `kind` to the cluster before the block's tests and closes it after. */
export function clusterClient(kind: ClientKind, cluster: () => RedisClusterHandle): () => TestClient {
  let client: TestClient | undefined;
  beforeAll(async () => {
    client = await connectTestClient(kind, { cluster: cluster().nodes });
  });
  afterAll(() => client?.close());
  return () => client!;
}
