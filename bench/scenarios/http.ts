/**
 * HTTP through Express, driven by autocannon from a worker thread (so the load generator does
 * not share the server's event loop). Each connection is its own account (x-api-key).
 *   bare Express              a trivial JSON route: the ceiling for any middleware;
 *   express-rate-limit        + rate-limit-redis on the same node-redis client, keyed by account;
 *   tollgate admit middleware the few lines a host writes around tg.limits.admit, the
 *                             subject taken from the header as express-rate-limit does;
 *   tollgate keys.verify      the realistic middleware: checks the API key and admits its
 *                             subject in one call (one script), 401 for a bad key;
 *   the example server        its free endpoint (key check + admit, one command) and the
 *                             charged transcript endpoint, with its own authentication and guard;
 *   the middlewares           tollgate/express, tollgate/hono (on @hono/node-server) and
 *                             tollgate/fastify as a host uses them (key verified with the admit),
 *                             and @fastify/rate-limit with its Redis store (ioredis, which that
 *                             store needs; the tollgate Fastify row uses the same client).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { createServer, type Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import Fastify, { type FastifyPluginCallback, type FastifyRequest } from 'fastify';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import express, { type Express } from 'express';
import { rateLimit } from 'express-rate-limit';
import { RedisStore, type RedisReply } from 'rate-limit-redis';
import { rateLimit as expressMiddleware } from '../../src/express.ts';
import { rateLimit as fastifyPlugin } from '../../src/fastify.ts';
import { rateLimit as honoMiddleware } from '../../src/hono.ts';
import { rateLimitHeaders } from '../../src/http.ts';
import type { Tollgate } from '../../src/index.ts';
import type { BenchClient } from '../clients.ts';
import { BENCH_PLANS, parallel } from '../fixture.ts';
import type { Measurement } from '../measure.ts';

export const HTTP_SCENARIO = {
  bare: 'bare Express',
  erl: 'Express + express-rate-limit + rate-limit-redis',
  admit: 'Express + tollgate admit middleware',
  verify: 'Express + tollgate keys.verify middleware',
  exampleFree: 'example server: free endpoint',
  exampleCharged: 'example server: charged transcript',
  expressMiddleware: 'Express + tollgate/express rateLimit',
  hono: 'Hono (node server) + tollgate/hono rateLimit',
  fastifyPeer: 'Fastify + @fastify/rate-limit (Redis store, ioredis)',
  fastify: 'Fastify + tollgate/fastify rateLimit (ioredis)',
  fastifySubject: 'Fastify + tollgate/fastify rateLimit by subject, no key check (ioredis)',
} as const;

/** A server listening on 127.0.0.1 and a free port. */
interface Listening {
  url: string;
  close(): Promise<void>;
}

export interface HttpTarget {
  key: string;
  name: string;
  /** An Express app, or a server of another framework. */
  app: Express | { listen(): Promise<Listening> };
  /** The Redis client the row uses; default node-redis. */
  client?: 'node-redis' | 'ioredis';
  path: string;
  /** Sent as x-api-key, one per connection: account ids for the bench's apps, real keys for the example. */
  apiKeys: string[];
}

const CONNECTION_SETUP = fileURLToPath(new URL('./connection.cjs', import.meta.url));

function ok(_req: express.Request, res: express.Response) {
  res.json({ ok: true });
}

export function bareApp(): Express {
  const app = express();
  app.get('/ping', ok);
  return app;
}

export function expressRateLimitApp(client: BenchClient): Express {
  const app = express();
  app.use(
    rateLimit({
      windowMs: 60_000,
      limit: 1_000_000_000,
      standardHeaders: 'draft-7',
      legacyHeaders: true,
      keyGenerator: (req) => req.get('x-api-key') ?? 'anonymous',
      store: new RedisStore({
        prefix: 'erl:',
        sendCommand: (...args: string[]) => client.command(args) as Promise<RedisReply>,
      }),
    }),
  );
  app.get('/ping', ok);
  return app;
}

export function tollgateAdmitApp(tg: Tollgate): Express {
  const app = express();
  app.use(async (req, res, next) => {
    const admission = await tg.limits.admit(req.get('x-api-key') ?? '');
    res.set(rateLimitHeaders(admission));
    if (!admission.ok) {
      res.status(429).json({ error: { type: 'rate_limited', message: 'Rate limit exceeded' } });
      return;
    }
    next();
  });
  app.get('/ping', ok);
  return app;
}

export function tollgateVerifyApp(tg: Tollgate): Express {
  const app = express();
  app.use(async (req, res, next) => {
    const verified = await tg.keys.verify(req.get('x-api-key') ?? '');
    if (!verified.ok) {
      res.status(401).json({ error: { type: 'unauthorized', message: 'Invalid API key' } });
      return;
    }
    res.set(rateLimitHeaders(verified.admission));
    if (!verified.admission.ok) {
      res.status(429).json({ error: { type: 'rate_limited', message: 'Rate limit exceeded' } });
      return;
    }
    next();
  });
  app.get('/ping', ok);
  return app;
}

const byKey = (headers: Record<string, string | string[] | undefined>) => (typeof headers['x-api-key'] === 'string' ? headers['x-api-key'] : null);

export function expressMiddlewareApp(tg: Tollgate): Express {
  const app = express();
  app.use(expressMiddleware({ tollgate: tg, key: (req) => byKey(req.headers) }));
  app.get('/ping', ok);
  return app;
}

export function honoApp(tg: Tollgate): { listen(): Promise<Listening> } {
  const app = new Hono();
  app.use(honoMiddleware({ tollgate: tg, key: (c) => c.req.header('x-api-key') ?? null }));
  app.get('/ping', (c) => c.json({ ok: true }));
  return { listen: () => listenNode(createServer(getRequestListener(app.fetch))) };
}

/** With `by: "subject"`, the header is the account id, counted unverified as @fastify/rate-limit counts its key. */
export function fastifyApp(tg: Tollgate, by: 'key' | 'subject' = 'key'): { listen(): Promise<Listening> } {
  const read = (request: FastifyRequest) => byKey(request.headers);
  return fastifyListening(async (app) => {
    await app.register(fastifyPlugin, by === 'key' ? { tollgate: tg, key: read } : { tollgate: tg, subject: read });
  });
}

/** @fastify/rate-limit with its Redis store (an ioredis client), keyed by account as the others. */
export function fastifyRateLimitApp(ioredis: unknown): { listen(): Promise<Listening> } {
  // Loaded untyped: its declarations and tollgate/fastify's both name `config.rateLimit`.
  const peer = createRequire(import.meta.url)('@fastify/rate-limit') as FastifyPluginCallback<Record<string, unknown>>;
  return fastifyListening(async (app) => {
    await app.register(peer, {
      max: 1_000_000_000,
      timeWindow: 60_000,
      redis: ioredis,
      nameSpace: 'frl:',
      keyGenerator: (request: { headers: Record<string, unknown> }) => String(request.headers['x-api-key'] ?? 'anonymous'),
    });
  });
}

function fastifyListening(register: (app: ReturnType<typeof Fastify>) => Promise<void>): { listen(): Promise<Listening> } {
  return {
    async listen() {
      const app = Fastify();
      await register(app);
      app.get('/ping', async () => ({ ok: true }));
      await app.listen({ port: 0, host: '127.0.0.1' });
      return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
    },
  };
}

/**
 * The Express example (examples/express/app.ts over examples/shared/service.ts) with its own
 * API keys: a free read (GET /api/v1/videos/:id) and the charged GET /transcript/:id. A gap
 * the report names when the example is not there.
 */
export async function exampleApps(redisUrl: string): Promise<{ gap: string } | { targets: HttpTarget[]; close(): Promise<void> }> {
  const appFile = new URL('../../examples/express/app.ts', import.meta.url);
  const serviceFile = new URL('../../examples/shared/service.ts', import.meta.url);
  if (!existsSync(appFile) || !existsSync(serviceFile)) return { gap: 'examples/express/app.ts or examples/shared/service.ts does not exist' };
  const { createExpressApp } = (await import(appFile.href)) as typeof import('../../examples/express/app.ts');
  const { createService } = (await import(serviceFile.href)) as typeof import('../../examples/shared/service.ts');
  const service = await createService({ redisUrl, prefix: 'ex', plans: BENCH_PLANS, worker: 'manual', sweepEveryMs: 0 });
  const apiKeys: string[] = [];
  await parallel(64, 16, async (i) => {
    apiKeys[i] = (await service.createAccount('bench')).apiKey;
  });
  const app = createExpressApp(service);
  return {
    targets: [
      { key: 'exampleFree', name: HTTP_SCENARIO.exampleFree, app, path: '/api/v1/videos/dQw4w9WgXcQ', apiKeys },
      { key: 'exampleCharged', name: HTTP_SCENARIO.exampleCharged, app, path: '/transcript/dQw4w9WgXcQ', apiKeys },
    ],
    close: () => service.close(),
  };
}

async function listen(app: HttpTarget['app']): Promise<Listening> {
  if (!('use' in app)) return app.listen();
  return listenNode(createServer(app));
}

function listenNode(server: Server): Promise<Listening> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: async () => {
          server.closeAllConnections();
          await new Promise((done) => server.close(done));
        },
      });
    });
  });
}

function fire(url: string, connections: number, seconds: number, apiKeys: string[]): Promise<autocannon.Result> {
  process.env.BENCH_API_KEYS = apiKeys.join(','); // the worker thread copies the environment
  return autocannon({
    url,
    connections,
    duration: seconds,
    workers: 1,
    setupClient: CONNECTION_SETUP,
  } as unknown as autocannon.Options); // the types predate workers mode, where setupClient is a file path
}

/**
 * Warm-up, then a measured run (beforeMeasure runs between them, e.g. CONFIG RESETSTAT); any
 * error or non-2xx response fails the scenario.
 */
export async function measureHttp(
  target: HttpTarget,
  connections: number,
  seconds: number,
  warmupSeconds: number,
  beforeMeasure?: () => Promise<void>,
): Promise<{ m: Measurement; bytesPerResponse: number }> {
  const { url, close } = await listen(target.app);
  try {
    if (warmupSeconds > 0) await fire(`${url}${target.path}`, connections, warmupSeconds, target.apiKeys);
    await beforeMeasure?.();
    const elu = performance.eventLoopUtilization();
    const result = await fire(`${url}${target.path}`, connections, seconds, target.apiKeys);
    const busy = performance.eventLoopUtilization(elu);
    if (result.errors > 0 || result.non2xx > 0 || result.timeouts > 0) {
      throw new Error(`${target.name}: ${result.errors} errors, ${result.non2xx} non-2xx, ${result.timeouts} timeouts`);
    }
    const m = {
      concurrency: connections,
      ops: result.requests.total,
      seconds: result.duration,
      opsPerSec: result.requests.total / result.duration,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      maxMs: result.latency.max,
      // The server's event loop (this thread; autocannon has its own): busy µs per request.
      cpuUsPerOp: (busy.active * 1000) / result.requests.total,
    };
    return { m, bytesPerResponse: result.throughput.total / result.requests.total };
  } finally {
    await close();
  }
}
