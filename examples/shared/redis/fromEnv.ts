/**
 * The embedded default: with REDIS_URL unset, start a throwaway redis-server on a
 * free local port (no persistence, in a temp dir) and stop it when the server stops. It runs
 * in our process group, so stopping the group (Ctrl-C) stops it too.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseClusterNodes, type RedisTarget } from './client.ts';

export interface LocalRedis {
  target: RedisTarget;
  /** True when we started it (and so must stop it). */
  started: boolean;
  stop(): Promise<void>;
}

/** REDIS_CLUSTER_NODES (a cluster), else REDIS_URL, else a redis-server started here. */
export async function redisFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<LocalRedis> {
  if (env.REDIS_CLUSTER_NODES) {
    if (env.REDIS_URL) throw new Error('Set REDIS_URL or REDIS_CLUSTER_NODES, not both');
    return { target: { clusterNodes: parseClusterNodes(env.REDIS_CLUSTER_NODES) }, started: false, stop: async () => {} };
  }
  if (env.REDIS_URL) return { target: { url: env.REDIS_URL }, started: false, stop: async () => {} };
  return startLocalRedis();
}

async function startLocalRedis(): Promise<LocalRedis> {
  const port = await freePort();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-redis-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'ENOENT'
          ? new Error(
              'REDIS_URL is not set and redis-server is not on PATH: install Redis >= 7 (apt-get install redis-server) or set REDIS_URL=redis://host:port',
            )
          : error,
      ),
    );
    child.once('exit', (code) => reject(new Error(`redis-server exited with code ${code} before it was ready`)));
  });
  failed.catch(() => {});
  await Promise.race([waitForPing(port), failed]);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, sleep(5_000).then(() => child.kill('SIGKILL'))]);
    }
    await rm(dir, { recursive: true, force: true });
  };
  return { target: { url: `redis://127.0.0.1:${port}` }, started: true, stop };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

async function waitForPing(port: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => socket.write('PING\r\n'));
      socket.once('data', (data) => {
        socket.destroy();
        resolve(data.toString().startsWith('+PONG'));
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`redis-server on port ${port} did not answer PING`);
}
