/**
 * The Express adapter: registers the shared route table and translates requests and replies.
 * Nothing here knows about credits, limits or jobs.
 */
import express, { type Request, type Response } from 'express';
import { readBody, type ReadBody } from '../shared/http/body.ts';
import type { HttpReply } from '../shared/http/handler.ts';
import { listen, type Listening } from '../shared/http/listen.ts';
import type { IncomingRequest, Service } from '../shared/service.ts';

export function createExpressApp(service: Service): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((req, res, next) => {
    const refused = service.screen(toIncoming(req));
    if (refused) send(res, refused);
    else next();
  });
  // Every body is read by the shared reader (shared/http/body.ts); a problem with it reaches the
  // route as bodyError, answered there (400, 413, 415).
  app.use((req, res, next) => {
    readBody(req).then((read) => {
      res.locals.body = read;
      next();
    }, next);
  });
  for (const route of service.routes) {
    const method = route.method === 'GET' ? 'get' : route.method === 'POST' ? 'post' : 'delete';
    app[method](route.path, async (req, res) => send(res, await route.handle(toIncoming(req))));
  }
  // Any other method on a known path (OPTIONS, PATCH, ...): 405 with Allow, not Express's own answer.
  for (const { path, allow } of service.paths) app.all(path, (req, res) => send(res, service.methodNotAllowed(toIncoming(req), allow)));
  app.use((req, res) => send(res, service.notFound(toIncoming(req))));
  // Anything thrown around the routes gets the error body, not Express's HTML page.
  app.use((error: unknown, req: Request, res: Response, next: express.NextFunction) => {
    if (res.headersSent) return next(error);
    send(res, service.failed(toIncoming(req), error));
  });
  return app;
}

function toIncoming(req: Request): IncomingRequest {
  const query: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.query)) query[name] = first(value);
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.headers)) headers[name] = first(value);
  const read = req.res?.locals.body as ReadBody | undefined;
  return {
    method: req.method,
    path: req.path,
    params: { ...(req.params as Record<string, string>) },
    query,
    headers,
    body: read?.body,
    ip: req.socket.remoteAddress,
    secure: (req.socket as { encrypted?: boolean }).encrypted === true,
    ...(read?.bodyType === undefined ? {} : { bodyType: read.bodyType }),
    ...(read?.bodyError === undefined ? {} : { bodyError: read.bodyError }),
  };
}

function send(res: Response, reply: HttpReply): void {
  res.status(reply.status).set(reply.headers);
  // A body too large to read to its end: the connection cannot carry another request.
  if ((res.locals.body as ReadBody | undefined)?.drained === false) res.set('Connection', 'close');
  if (reply.body === undefined) res.end();
  else if (typeof reply.body === 'string') res.send(reply.body);
  else res.send(JSON.stringify(reply.body));
}

function first(value: unknown): string | undefined {
  if (Array.isArray(value)) return first(value[0]);
  return typeof value === 'string' ? value : undefined;
}

export function listenExpress(service: Service, port: number, host?: string): Promise<Listening> {
  return listen(createExpressApp(service), port, host);
}
