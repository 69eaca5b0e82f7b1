// Throwaway redis-server processes for tests: each on its own free port and temp dir, so test
// runs never touch a Redis already listening on 6379 and can run side by side.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const REDIS_SERVER_MISSING =
  'redis-server is not on PATH. Install Redis >= 7.0 (Debian/Ubuntu: `sudo apt-get install redis-server`); ' +
  'the tests start their own servers from it on free ports.';

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;

export interface RedisServerOptions {
  /** Extra redis-server arguments, appended after the defaults so they can override them. */
  args?: string[];
  /** Turn on the AOF with fsync on every write, so a SIGKILL loses nothing acknowledged. */
  appendOnly?: boolean;
  /** Data directory to use and keep; by default a temp dir removed by stop(). */
  dir?: string;
  /** Fixed port; by default a free one (with retries if another process takes it first). */
  port?: number;
}

export interface RedisServer {
  host: '127.0.0.1';
  port: number;
  url: string;
  dir: string;
  /** Shuts the server down (SIGTERM, then SIGKILL) and removes its temp dir. Idempotent. */
  stop(): Promise<void>;
  /** Sends a signal (default SIGKILL) and waits for the process to exit. Keeps the dir. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the server again on the same port and dir (after kill, or stopping it first). */
  restart(): Promise<void>;
}

/** Raised when redis-server could not bind its port (or cluster bus port). */
export class PortInUseError extends Error {
  override readonly name = 'PortInUseError';
  constructor(
    readonly port: number,
    output: string,
  ) {
    super(`redis-server could not bind port ${port} (or its cluster bus port):\n${output}`);
  }
}

// Children still running when the test process exits are killed with it, so an aborted run
// does not leave redis-server processes behind.
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** True when nothing listens on 127.0.0.1:port (checked by binding it for a moment). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.unref();
    probe.once('error', () => resolve(false));
    probe.listen({ host: HOST, port, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/** A port the kernel considers free right now. Someone may take it before we do: callers retry. */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.once('error', reject);
    probe.listen({ host: HOST, port: 0, exclusive: true }, () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => (port > 0 ? resolve(port) : reject(new Error('no port from the kernel'))));
    });
  });
}

type Reply = string | number | null | Reply[] | Error;

/**
 * Sends one command over a fresh TCP connection and returns the decoded RESP2 reply (error
 * replies come back as Error values, not rejections). Dependency-free on purpose: the
 * helpers must work before any client library is trusted.
 */
export function rawCommand(port: number, args: string[], timeoutMs = 2_000): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: HOST, port });
    let buffer = Buffer.alloc(0);
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`no reply from ${HOST}:${port} in ${timeoutMs} ms`)));
    socket.once('error', reject);
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      const parsed = parseReply(buffer, 0);
      if (parsed === undefined) return;
      socket.end();
      resolve(parsed.value);
    });
    socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
  });
}

function parseReply(buffer: Buffer, start: number): { value: Reply; end: number } | undefined {
  const lineEnd = buffer.indexOf('\r\n', start);
  if (lineEnd < 0) return undefined;
  const type = String.fromCharCode(buffer[start] ?? 0);
  const line = buffer.toString('utf8', start + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case '+':
      return { value: line, end: next };
    case '-':
      return { value: new Error(line), end: next };
    case ':':
      return { value: Number(line), end: next };
    case '$': {
      const length = Number(line);
      if (length < 0) return { value: null, end: next };
      if (buffer.length < next + length + 2) return undefined;
      return { value: buffer.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { value: null, end: next };
      const items: Reply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buffer, at);
        if (item === undefined) return undefined;
        items.push(item.value);
        at = item.end;
      }
      return { value: items, end: at };
    }
    default:
      throw new Error(`unexpected RESP reply: ${buffer.toString('utf8', start, lineEnd)}`);
  }
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function waitForExit(child: ChildProcess): Promise<void> {
  // No pid: the spawn itself failed (e.g. ENOENT) and there is no process to wait for.
  if (exited(child) || child.pid === undefined) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

interface Running {
  child: ChildProcess;
  output: () => string;
}

function spawnServer(port: number, dir: string, options: RedisServerOptions): Running {
  const persistence = options.appendOnly ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
  const args = [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--dir',
    dir,
    '--save',
    '',
    ...persistence,
    '--daemonize',
    'no',
    '--logfile',
    '',
    ...(options.args ?? []),
  ];
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  child.once('exit', () => live.delete(child));
  // Keep the tail of the log for error messages; always drain the pipes so the child never blocks.
  let log = '';
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString('utf8')).slice(-4_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { child, output: () => log };
}

async function waitUntilReady(port: number, running: Running): Promise<void> {
  const { child, output } = running;
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (spawnError !== undefined) {
      const missing = (spawnError as NodeJS.ErrnoException).code === 'ENOENT';
      throw missing ? new Error(REDIS_SERVER_MISSING) : spawnError;
    }
    if (exited(child)) {
      // Give the pipes a moment to deliver the last log lines before reading them.
      await sleep(20);
      const log = output();
      if (/Address already in use|Could not create server TCP listening socket|bind: /i.test(log)) {
        throw new PortInUseError(port, log);
      }
      throw new Error(`redis-server on port ${port} exited (code ${child.exitCode}, signal ${child.signalCode}):\n${log}`);
    }
    try {
      // -LOADING while the AOF is replayed comes back as an Error value: keep waiting.
      if ((await rawCommand(port, ['PING'], 500)) === 'PONG') return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server on port ${port} did not answer PING within ${READY_TIMEOUT_MS} ms:\n${output()}`);
    }
    await sleep(25);
  }
}

async function startOn(port: number, dir: string, options: RedisServerOptions): Promise<Running> {
  const running = spawnServer(port, dir, options);
  try {
    await waitUntilReady(port, running);
  } catch (error) {
    running.child.kill('SIGKILL');
    await waitForExit(running.child);
    throw error;
  }
  return running;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const ownsDir = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(path.join(os.tmpdir(), 'tollgate-redis-')));

  let port = options.port ?? 0;
  let running: Running | undefined;
  try {
    for (let attempt = 1; running === undefined; attempt++) {
      if (options.port === undefined) port = await findFreePort();
      try {
        running = await startOn(port, dir, options);
      } catch (error) {
        // Another process took the port between our probe and redis-server's bind: pick another.
        const retry = error instanceof PortInUseError && options.port === undefined && attempt < 5;
        if (!retry) throw error;
      }
    }
  } catch (error) {
    if (ownsDir) await rm(dir, { recursive: true, force: true });
    throw error;
  }

  let current: Running = running;
  let stopping: Promise<void> | undefined;

  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    if (!exited(current.child)) current.child.kill(signal);
    await waitForExit(current.child);
  };

  const shutdown = async () => {
    if (exited(current.child)) return;
    const forced = setTimeout(() => current.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    try {
      await kill('SIGTERM');
    } finally {
      clearTimeout(forced);
    }
  };

  return {
    host: HOST,
    port,
    url: `redis://${HOST}:${port}`,
    dir,
    kill,
    async restart() {
      if (stopping !== undefined) throw new Error(`redis-server on port ${port} was stopped; start a new one`);
      await shutdown();
      // The old process has exited but the kernel may need a moment before the port binds again.
      for (let attempt = 1; ; attempt++) {
        try {
          current = await startOn(port, dir, options);
          return;
        } catch (error) {
          if (!(error instanceof PortInUseError) || attempt >= 20) throw error;
          await sleep(100);
        }
      }
    },
    stop() {
      stopping ??= (async () => {
        await shutdown();
        if (ownsDir) await rm(dir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}
