/**
 * The Koa adapter: registers the shared route table on @koa/router and translates requests and
 * replies. Nothing here knows about credits, limits or jobs.
 */
import { bodyParser } from '@koa/bodyparser';
import Router from '@koa/router';
import Koa, { type Context } from 'koa';
import type { HttpReply } from '../shared/http.ts';
import { listen, type Listening } from '../shared/listen.ts';
import type { IncomingRequest, Service } from '../shared/service.ts';

export function createKoaApp(service: Service): Koa {
  const app = new Koa();
  const router = new Router();
  // Anything thrown below gets the SPEC §8 body, not Koa's plain-text error.
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
  // Parse a form as a form and every other body as JSON; a malformed one reaches the handler
  // as bodyError (400 there).
  app.use(
    bodyParser({
      detectJSON: (ctx) => !ctx.request.is('application/x-www-form-urlencoded'),
      jsonLimit: '1mb',
      formLimit: '64kb',
      jsonStrict: false,
      parsedMethods: ['POST', 'PUT', 'PATCH', 'DELETE'],
      onError: (error, ctx) => {
        ctx.state.bodyError = (error as { type?: string }).type === 'entity.too.large' ? 'The request body is too large' : 'The request body is not valid JSON';
      },
    }),
  );
  for (const route of service.routes) {
    const method = route.method === 'GET' ? 'get' : route.method === 'POST' ? 'post' : 'delete';
    router[method](route.path, async (ctx) => send(ctx, await route.handle(toIncoming(ctx))));
  }
  app.use(router.routes());
  app.use(async (ctx) => send(ctx, service.notFound(toIncoming(ctx))));
  return app;
}

function toIncoming(ctx: Context): IncomingRequest {
  const query: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(ctx.query)) query[name] = first(value);
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(ctx.headers)) headers[name] = first(value);
  const raw = (ctx.request as { rawBody?: string }).rawBody;
  const bodyError = ctx.state.bodyError as string | undefined;
  return {
    method: ctx.method,
    path: ctx.path,
    params: { ...((ctx as Context & { params?: Record<string, string> }).params ?? {}) },
    query,
    headers,
    // The parser turns an absent body into {}; the handlers want undefined for "no body".
    body: raw === undefined || raw === '' ? undefined : (ctx.request as { body?: unknown }).body,
    ip: ctx.req.socket.remoteAddress,
    secure: (ctx.req.socket as { encrypted?: boolean }).encrypted === true,
    ...(bodyError === undefined ? {} : { bodyError }),
  };
}

function send(ctx: Context, reply: HttpReply): void {
  ctx.status = reply.status;
  ctx.set(reply.headers);
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
