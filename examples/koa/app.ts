/**
 * The Koa adapter: registers the shared route table on @koa/router and translates requests and
 * replies. Nothing here knows about credits, limits or jobs.
 */
import Router from '@koa/router';
import Koa, { type Context } from 'koa';
import { readBody, type ReadBody } from '../shared/http/body.ts';
import type { HttpReply } from '../shared/http/handler.ts';
import { listen, type Listening } from '../shared/http/listen.ts';
import type { IncomingRequest, Service } from '../shared/service.ts';

export function createKoaApp(service: Service): Koa {
  const app = new Koa();
  const router = new Router();
  // Anything thrown below gets the error body, not Koa's plain-text error.
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      send(ctx, service.failed(toIncoming(ctx), error));
    }
  });
  app.use(async (ctx, next) => {
    const refused = service.screen(toIncoming(ctx));
    if (refused) send(ctx, refused);
    else await next();
  });
  // Every body is read by the shared reader (shared/http/body.ts); a problem with it reaches the
  // route as bodyError, answered there (400, 413, 415).
  app.use(async (ctx, next) => {
    ctx.state.read = await readBody(ctx.req);
    await next();
  });
  for (const route of service.routes) {
    const method = route.method === 'GET' ? 'get' : route.method === 'POST' ? 'post' : 'delete';
    router[method](route.path, async (ctx) => send(ctx, await route.handle(toIncoming(ctx))));
  }
  // Any other method on a known path (OPTIONS, PATCH, ...): 405 with Allow.
  for (const { path, allow } of service.paths) router.all(path, async (ctx) => send(ctx, service.methodNotAllowed(toIncoming(ctx), allow)));
  app.use(router.routes());
  app.use(async (ctx) => send(ctx, service.notFound(toIncoming(ctx))));
  return app;
}

function toIncoming(ctx: Context): IncomingRequest {
  const query: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(ctx.query)) query[name] = first(value);
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(ctx.headers)) headers[name] = first(value);
  const read = ctx.state.read as ReadBody | undefined;
  return {
    method: ctx.method,
    path: ctx.path,
    params: { ...((ctx as Context & { params?: Record<string, string> }).params ?? {}) },
    query,
    headers,
    body: read?.body,
    ip: ctx.req.socket.remoteAddress,
    secure: (ctx.req.socket as { encrypted?: boolean }).encrypted === true,
    ...(read?.bodyType === undefined ? {} : { bodyType: read.bodyType }),
    ...(read?.bodyError === undefined ? {} : { bodyError: read.bodyError }),
  };
}

function send(ctx: Context, reply: HttpReply): void {
  ctx.status = reply.status;
  ctx.set(reply.headers);
  // A body too large to read to its end: the connection cannot carry another request.
  if ((ctx.state.read as ReadBody | undefined)?.drained === false) ctx.set('Connection', 'close');
  ctx.body = reply.body === undefined ? '' : typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  // Koa would re-derive Content-Type from a string body; keep the handler's.
  if (reply.headers['Content-Type']) ctx.type = reply.headers['Content-Type'];
}

function first(value: unknown): string | undefined {
  if (Array.isArray(value)) return first(value[0]);
  return typeof value === 'string' ? value : undefined;
}

export function listenKoa(service: Service, port: number, host?: string): Promise<Listening> {
  return listen(createKoaApp(service).callback(), port, host);
}
