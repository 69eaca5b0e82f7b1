// Start-up as a user runs it: `npm start` / `npm run start:koa` with no REDIS_URL start
// their own redis-server, print the URL and a demo API key that gets a 200, and stop that
// redis-server again when the process group is stopped.
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { redisFromEnv } from '../../examples/shared/redis/fromEnv.ts';
import net from 'node:net';
import { findFreePort } from '../helpers/redisServer.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const running = new Set<ChildProcess>();

afterEach(() => {
  for (const child of running) stopGroup(child, 'SIGKILL');
  running.clear();
});

function stopGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts the npm script in its own process group and waits for the demo key line. */
async function start(script: string[], port: number): Promise<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port) };
  delete env.REDIS_URL;
  delete env.ADMIN_TOKEN;
  const child = spawn('npm', script, { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!/demo API key \(shown once\): \S+\n/.test(output)) {
    if (child.exitCode !== null) throw new Error(`${script.join(' ')} exited early:\n${output}`);
    if (Date.now() > deadline) throw new Error(`${script.join(' ')} printed no demo key in 60 s:\n${output}`);
    await sleep(100);
  }
  return { child, output: () => output, exited };
}

describe.each([
  { command: 'npm start', script: ['start'] },
  { command: 'npm run start:koa', script: ['run', 'start:koa'] },
])('$command', ({ script }) => {
  it('prints the URL and a demo API key that gets a 200, and stops the redis-server it started', { timeout: 90_000 }, async () => {
    const port = await findFreePort();
    const { child, output, exited } = await start(script, port);
    const url = /listening on (http:\/\/\S+)/.exec(output())![1]!;
    expect(url).toBe(`http://127.0.0.1:${port}`);
    const key = /demo API key \(shown once\): (\S+)/.exec(output())![1]!;
    const redisPort = Number(/redis: redis:\/\/127\.0\.0\.1:(\d+) \(started for this run/.exec(output())![1]);
    expect(output()).toContain(`curl -H "Authorization: Bearer ${key}" ${url}/transcript/`);
    expect(output()).toContain(`website: ${url}/ (sign in there with the demo API key)`);
    const site = await fetch(`${url}/`);
    expect(site.status).toBe(200);
    expect(await site.text()).toContain('<form method="post" action="/web/login"');

    const reply = await fetch(`${url}/transcript/dQw4w9WgXcQ?format=text`, { headers: { authorization: `Bearer ${key}` } });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('x-ratelimit-limit')).toBe('100');
    expect((await fetch(`${url}/api/v1/usage`)).status).toBe(401);
    expect(await accepts(redisPort)).toBe(true);

    stopGroup(child, 'SIGTERM');
    await exited;
    running.delete(child);
    const deadline = Date.now() + 10_000;
    while ((await accepts(redisPort)) && Date.now() < deadline) await sleep(100);
    expect(await accepts(redisPort)).toBe(false);
    expect(await accepts(port)).toBe(false);
  });
});

describe('start-up settings', () => {
  it('FAILED_AUTH_PER_MINUTE must be a whole number >= 1; start-up refuses anything else before Redis is touched', async () => {
    const { main } = await import('../../examples/shared/main.ts');
    const listen = () => Promise.reject(new Error('must not listen'));
    for (const value of ['0', '-3', '2.5', 'ten']) {
      await expect(main('express', listen, { FAILED_AUTH_PER_MINUTE: value, REDIS_URL: 'redis://127.0.0.1:1' })).rejects.toThrow(/FAILED_AUTH_PER_MINUTE/);
    }
  });
});

describe('where the servers find Redis', () => {
  it('REDIS_CLUSTER_NODES names a cluster by its masters; with REDIS_URL too, or malformed, start-up refuses', async () => {
    const found = await redisFromEnv({ REDIS_CLUSTER_NODES: 'redis-a:7000, 10.0.0.2:7001' });
    expect(found).toMatchObject({
      target: {
        clusterNodes: [
          { host: 'redis-a', port: 7000 },
          { host: '10.0.0.2', port: 7001 },
        ],
      },
      started: false,
    });
    await expect(redisFromEnv({ REDIS_CLUSTER_NODES: 'a:1', REDIS_URL: 'redis://b:2' })).rejects.toThrow(/not both/);
    await expect(redisFromEnv({ REDIS_CLUSTER_NODES: 'a:1,b' })).rejects.toThrow(/host:port,host:port/);
    expect((await redisFromEnv({ REDIS_URL: 'redis://b:2' })).target).toEqual({ url: 'redis://b:2' });
  });
});
