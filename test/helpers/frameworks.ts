// The same small app on each framework tollgate has a middleware for (Express, Koa, Fastify,
// Hono on Hono's Node server), served on 127.0.0.1 and a free port: GET /ok answers the
// request's pass, GET /boom fails after the middleware. The options are given through a
// neutral view of the request (its headers), so one test drives all four.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import express, { type ErrorRequestHandler, type Request } from 'express';
import Fastify, { type FastifyRequest } from 'fastify';
import { Hono, type Context as HonoContext } from 'hono';
import Koa, { type Context } from 'koa';
import { rateLimit as expressRateLimit, type ExpressRateLimitOptions } from '../../src/express.ts';
import { rateLimit as fastifyRateLimit, type FastifyRateLimitOptions } from '../../src/fastify.ts';
import { rateLimit as honoRateLimit, type HonoRateLimitOptions } from '../../src/hono.ts';
import type { StoreErrorMode } from '../../src/http.ts';
import type { Tollgate } from '../../src/index.ts';
import { rateLimit as koaRateLimit, type KoaRateLimitOptions } from '../../src/koa.ts';

export type Headers = Record<string, string | string[] | undefined>;

/** The options every framework takes, with the request read through its headers. */
export interface Options {
  key?: (headers: Headers) => string | null;
  subject?: (headers: Headers) => string | null;
  credits?: number;
  cost?: number;
  surface?: string;
  policy?: string;
  skip?: (headers: Headers) => boolean;
  ietfHeaders?: boolean;
  /** Answer a refusal with 299 and `{ custom: reason, status }`. */
  onDenied?: true;
  onStoreError?: StoreErrorMode;
  instances?: number;
  tollgate?: Tollgate;
}

export interface App {
  url: string;
  close(): Promise<void>;
}

export type MakeApp = (tollgate: Tollgate, options: Options) => Promise<App>;

export async function listen(handler: Parameters<typeof createServer>[1]): Promise<App> {
  const server: Server = createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** The options of one framework, its request read as headers by `view`. */
function common<Req>(tollgate: Tollgate, o: Options, view: (req: Req) => Headers) {
  const { credits, cost, surface, policy, ietfHeaders, onStoreError, instances } = o;
  return {
    tollgate: o.tollgate ?? tollgate,
    ...(o.key ? { key: (req: Req) => o.key!(view(req)) } : {}),
    ...(o.subject ? { subject: (req: Req) => o.subject!(view(req)) } : {}),
    ...(o.skip ? { skip: (req: Req) => o.skip!(view(req)) } : {}),
    ...Object.fromEntries(Object.entries({ credits, cost, surface, policy, ietfHeaders, onStoreError, instances }).filter(([, v]) => v !== undefined)),
  };
}

export function expressApp(tollgate: Tollgate, o: Options): Promise<App> {
  const app = express();
  const options: ExpressRateLimitOptions = {
    ...common(tollgate, o, (req: Request) => req.headers),
    ...(o.onDenied ? { onDenied: (_req, res, refusal) => void res.status(299).json({ custom: refusal.reason, status: refusal.reply.status }) } : {}),
  };
  app.use(expressRateLimit(options));
  // res.locals.tollgate is typed by tollgate/express (RateLimitPass | undefined).
  app.get('/ok', (_req, res) => void res.json({ pass: res.locals.tollgate ?? null }));
  app.get('/boom', () => {
    throw new Error('handler failed');
  });
  const onError: ErrorRequestHandler = (_error, _req, res, _next) => void res.status(500).json({ error: 'handler failed' });
  app.use(onError);
  return listen(app);
}

export function koaApp(tollgate: Tollgate, o: Options): Promise<App> {
  const app = new Koa();
  app.silent = true;
  const options: KoaRateLimitOptions = {
    ...common(tollgate, o, (ctx: Context) => ctx.headers),
    ...(o.onDenied
      ? { onDenied: (ctx, refusal) => void Object.assign(ctx, { status: 299, body: { custom: refusal.reason, status: refusal.reply.status } }) }
      : {}),
  };
  app.use(koaRateLimit(options));
  app.use(async (ctx) => {
    if (ctx.path === '/boom') ctx.throw(500, 'handler failed');
    // ctx.state.tollgate is typed by tollgate/koa.
    ctx.body = { pass: ctx.state.tollgate ?? null };
  });
  return listen(app.callback());
}

export async function fastifyApp(tollgate: Tollgate, o: Options): Promise<App> {
  const app = Fastify();
  const options: FastifyRateLimitOptions = {
    ...common(tollgate, o, (request: FastifyRequest) => request.headers),
    ...(o.onDenied ? { onDenied: (_request, reply, refusal) => void reply.code(299).send({ custom: refusal.reason, status: refusal.reply.status }) } : {}),
  };
  await app.register(fastifyRateLimit, options);
  // request.tollgate is typed by tollgate/fastify.
  app.get('/ok', async (request) => ({ pass: request.tollgate ?? null }));
  app.get('/boom', async () => {
    throw new Error('handler failed');
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

export function honoApp(tollgate: Tollgate, o: Options): Promise<App> {
  const app = new Hono();
  const options: HonoRateLimitOptions = {
    ...common(tollgate, o, (c: HonoContext) => c.req.header()),
    ...(o.onDenied ? { onDenied: (c, refusal) => c.json({ custom: refusal.reason, status: refusal.reply.status }, 299 as never) } : {}),
  };
  app.use(honoRateLimit(options));
  // c.get('tollgate') is typed by tollgate/hono.
  app.get('/ok', (c) => c.json({ pass: c.get('tollgate') ?? null }));
  app.get('/boom', () => {
    throw new Error('handler failed');
  });
  app.onError((_error, c) => c.json({ error: 'handler failed' }, 500));
  return listen(getRequestListener(app.fetch));
}

export const FRAMEWORKS = [
  ['express', expressApp],
  ['koa', koaApp],
  ['fastify', fastifyApp],
  ['hono', honoApp],
] as const satisfies ReadonlyArray<readonly [string, MakeApp]>;

/** A GET, its body parsed when it is JSON. */
export async function get(base: App, headers: Record<string, string> = {}, path = '/ok') {
  const response = await fetch(`${base.url}${path}`, { headers });
  const text = await response.text();
  const json = response.headers.get('content-type')?.startsWith('application/json');
  return { status: response.status, headers: response.headers, body: json ? JSON.parse(text) : text };
}
