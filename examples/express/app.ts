/**
 * The Express adapter: registers the shared route table and translates requests and replies.
 * Nothing here knows about credits, limits or jobs.
 */
import express, { type Request, type Response } from 'express';
import type { HttpReply } from '../shared/http.ts';
import { listen, type Listening } from '../shared/listen.ts';
import type { IncomingRequest, Service } from '../shared/service.ts';

const jsonBody = express.json({ type: () => true, limit: '1mb', strict: false });
/** The website's HTML forms; every other body is read as JSON. */
const formBody = express.urlencoded({ extended: false, limit: '64kb' });

export function createExpressApp(service: Service): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((req, res, next) => {
    const refused = service.screen(toIncoming(req));
    if (refused) send(res, refused);
    else next();
  });
  // Parse a form as a form and every other body as JSON; a malformed one reaches the handler
  // as bodyError (400 there).
  app.use((req, res, next) => {
    const parse = req.is('application/x-www-form-urlencoded') ? formBody : jsonBody;
    parse(req, res, (error?: unknown) => {
      if (error) (req as Request & { bodyError?: string }).bodyError = bodyErrorMessage(error);
      next();
    });
  });
  for (const route of service.routes) {
    const method = route.method === 'GET' ? 'get' : route.method === 'POST' ? 'post' : 'delete';
    app[method](route.path, async (req, res) => send(res, await route.handle(toIncoming(req))));
  }
  app.use((req, res) => send(res, service.notFound(toIncoming(req))));
  // Anything thrown around the routes gets the SPEC §8 body, not Express's HTML page.
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
  const bodyError = (req as Request & { bodyError?: string }).bodyError;
  return {
    method: req.method,
    path: req.path,
    params: { ...(req.params as Record<string, string>) },
    query,
    headers,
    body: req.body,
    ip: req.socket.remoteAddress,
    secure: (req.socket as { encrypted?: boolean }).encrypted === true,
    ...(bodyError === undefined ? {} : { bodyError }),
  };
}

function send(res: Response, reply: HttpReply): void {
  res.status(reply.status).set(reply.headers);
  if (reply.body === undefined) res.end();
  else if (typeof reply.body === 'string') res.send(reply.body);
  else res.send(JSON.stringify(reply.body));
}

function first(value: unknown): string | undefined {
  if (Array.isArray(value)) return first(value[0]);
  return typeof value === 'string' ? value : undefined;
}

export function bodyErrorMessage(error: unknown): string {
  const type = (error as { type?: unknown }).type;
  if (type === 'entity.too.large') return 'The request body is too large';
  return 'The request body is not valid JSON';
}

export function listenExpress(service: Service, port: number, host?: string): Promise<Listening> {
  return listen(createExpressApp(service), port, host);
}
