// tollgate/express and tollgate/koa: one middleware per framework that checks a key
// (or a subject the host names) and counts the request in one round trip, sets the rate-limit
// headers (docs/limits.md) and answers 401 / 429 / 402 / 503 with the error body; checkRequest is
// the same step for any other framework. Real apps, real HTTP, the test Redis.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type Request } from 'express';
import type { Redis } from 'ioredis';
import Koa, { type Context } from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimit as expressRateLimit, type ExpressRateLimitOptions } from '../src/express.ts';
import { checkRateLimitOptions, checkRequest, createTollgate, fromIoredis, type Tollgate } from '../src/index.ts';
import { rateLimit as koaRateLimit, type KoaRateLimitOptions } from '../src/koa.ts';
import type { RateLimitPass } from '../src/middleware.ts';
import { connectIoredis, uniquePrefix } from './helpers/redis.ts';
import { accountId, ManualClock } from './helpers/tollgate.ts';

/** The options both frameworks take, with the request read through a small neutral view. */
interface Options {
  key?: (headers: Headers) => string | null;
  subject?: (headers: Headers) => string | null;
  credits?: number;
  cost?: number;
  surface?: string;
  policy?: string;
  skip?: (headers: Headers) => boolean;
  ietfHeaders?: boolean;
  onDenied?: true;
  tollgate?: Tollgate;
}
type Headers = Record<string, string | string[] | undefined>;

interface App {
  url: string;
  close(): Promise<void>;
}

async function listen(handler: Parameters<typeof createServer>[1]): Promise<App> {
  const server: Server = createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** An Express app: GET /ok answers the pass, GET /boom throws after the middleware. */
function expressApp(tollgate: Tollgate, o: Options): Promise<App> {
  const app = express();
  const view = (req: Request) => req.headers;
  const options: ExpressRateLimitOptions = {
    tollgate: o.tollgate ?? tollgate,
    ...(o.key ? { key: (req) => o.key!(view(req)) } : {}),
    ...(o.subject ? { subject: (req) => o.subject!(view(req)) } : {}),
    ...(o.skip ? { skip: (req) => o.skip!(view(req)) } : {}),
    ...(o.onDenied ? { onDenied: (_req, res, refusal) => void res.status(299).json({ custom: refusal.reason, status: refusal.reply.status }) } : {}),
    ...pick(o),
  };
  app.use(expressRateLimit(options));
  app.get('/ok', (_req, res) => void res.json({ pass: (res.locals.tollgate as RateLimitPass | undefined) ?? null }));
  app.get('/boom', () => {
    throw new Error('handler failed');
  });
  const onError: ErrorRequestHandler = (_error, _req, res, _next) => void res.status(500).json({ error: 'handler failed' });
  app.use(onError);
  return listen(app);
}

/** A Koa app with the same two routes; errors go to Koa's own handler. */
function koaApp(tollgate: Tollgate, o: Options): Promise<App> {
  const app = new Koa();
  app.silent = true;
  const view = (ctx: Context) => ctx.headers;
  const options: KoaRateLimitOptions = {
    tollgate: o.tollgate ?? tollgate,
    ...(o.key ? { key: (ctx) => o.key!(view(ctx)) } : {}),
    ...(o.subject ? { subject: (ctx) => o.subject!(view(ctx)) } : {}),
    ...(o.skip ? { skip: (ctx) => o.skip!(view(ctx)) } : {}),
    ...(o.onDenied ? { onDenied: (ctx, refusal) => void Object.assign(ctx, { status: 299, body: { custom: refusal.reason, status: refusal.reply.status } }) } : {}),
    ...pick(o),
  };
  app.use(koaRateLimit(options));
  app.use(async (ctx) => {
    if (ctx.path === '/boom') ctx.throw(500, 'handler failed');
    ctx.body = { pass: ctx.state.tollgate ?? null };
  });
  return listen(app.callback());
}

function pick(o: Options) {
  const { credits, cost, surface, policy, ietfHeaders } = o;
  return Object.fromEntries(Object.entries({ credits, cost, surface, policy, ietfHeaders }).filter(([, v]) => v !== undefined));
}

const apiKey = (h: Headers) => (typeof h['x-api-key'] === 'string' ? h['x-api-key'] : null);

describe.each([
  ['express', expressApp],
  ['koa', koaApp],
] as const)('tollgate/%s rateLimit', (_name, makeApp) => {
  let io: Redis;
  let tg: Tollgate;
  let sends = 0;
  const clock = new ManualClock();
  const apps: App[] = [];

  beforeAll(async () => {
    io = await connectIoredis();
    // Counts what reaches Redis, so a request's round trips can be told.
    const counted = { call: (command: string, ...args: string[]) => ((sends += 1), io.call(command, ...args)) };
    tg = createTollgate({ redis: fromIoredis(counted), prefix: uniquePrefix('middleware'), clock: clock.fn, policies: { signin: { api: [{ limit: 2, windowMs: 60_000 }] } } });
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await io.quit();
  });

  async function app(options: Options): Promise<App> {
    const started = await makeApp(tg, options);
    apps.push(started);
    return started;
  }

  async function account(plan = 'free'): Promise<{ subject: string; key: string }> {
    const subject = accountId('mw');
    await tg.accounts.create(subject, { plan });
    return { subject, key: (await tg.keys.issue(subject)).key };
  }

  async function get(base: App, headers: Record<string, string> = {}, path = '/ok') {
    const response = await fetch(`${base.url}${path}`, { headers });
    const text = await response.text();
    const json = response.headers.get('content-type')?.startsWith('application/json');
    return { status: response.status, headers: response.headers, body: json ? JSON.parse(text) : text };
  }

  function expectErrorBody(reply: Awaited<ReturnType<typeof get>>, type: string) {
    expect(reply.body).toMatchObject({ error: { type }, request_id: expect.stringMatching(/^req_/) });
    expect(reply.headers.get('x-request-id')).toBe(reply.body.request_id);
    expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
  }

  it('a valid key passes in one Redis round trip with the rate-limit headers, and the handler sees its subject', async () => {
    const base = await app({ key: apiKey });
    const { subject, key } = await account();
    await get(base, { 'x-api-key': key }); // the script is loaded into Redis (NOSCRIPT, then EVAL) once
    const before = sends;
    const reply = await get(base, { 'x-api-key': key });
    expect(sends - before).toBe(1);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('x-ratelimit-limit')).toBe('30');
    expect(reply.headers.get('x-ratelimit-remaining')).toBe('28');
    expect(Number(reply.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
    expect(reply.body.pass).toMatchObject({ subject, surface: 'api', keyId: tg.keys.parse(key)!.keyId, admission: { allowed: true } });
  });

  it('no key, a malformed key and an unknown key get 401 unauthorized without rate-limit headers', async () => {
    const base = await app({ key: apiKey });
    const { key } = await account();
    const unknown = key.slice(0, -4) + (key.endsWith('0000') ? '1111' : '0000');
    for (const headers of [{}, { 'x-api-key': 'nope' }, { 'x-api-key': unknown }] as Record<string, string>[]) {
      const reply = await get(base, headers);
      expect(reply.status).toBe(401);
      expectErrorBody(reply, 'unauthorized');
      expect(reply.headers.get('x-ratelimit-limit')).toBeNull();
    }
  });

  it('over the budget: 429 rate_limited with Retry-After, and the denied request is not counted', async () => {
    const base = await app({ key: apiKey, cost: 10 });
    const { subject, key } = await account();
    for (let i = 0; i < 3; i++) expect((await get(base, { 'x-api-key': key })).status).toBe(200);
    const denied = await get(base, { 'x-api-key': key });
    expect(denied.status).toBe(429);
    expectErrorBody(denied, 'rate_limited');
    expect(denied.body.error.message).toBe('Rate limit exceeded');
    expect(Number(denied.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(denied.headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await tg.limits.peek(subject)).rateLimit.remaining).toBe(0);
    // The next window admits again.
    clock.advance(60_000);
    expect((await get(base, { 'x-api-key': key })).status).toBe(200);
  });

  it('credits short of the pre-check: 402 insufficient_quota with the counts and the rate-limit headers', async () => {
    const base = await app({ key: apiKey, credits: 1 });
    const { subject, key } = await account();
    expect((await get(base, { 'x-api-key': key })).body.pass.admission.credits).toEqual({ sufficient: true, balance: 30, needed: 1 });
    await tg.credits.charge(subject, { required: 30 });
    const reply = await get(base, { 'x-api-key': key });
    expect(reply.status).toBe(402);
    expectErrorBody(reply, 'insufficient_quota');
    expect(reply.body.error).toMatchObject({ remaining: 0, needed: 1 });
    expect(reply.headers.get('x-ratelimit-remaining')).toBe('28');
  });

  it('the quota store unreachable: 503 unavailable with Retry-After (fail closed)', async () => {
    const down = createTollgate({ redis: fromIoredis({ call: () => Promise.reject(new Error('connect ECONNREFUSED')) }) });
    const base = await app({ key: apiKey, tollgate: down });
    const { key } = await account();
    const reply = await get(base, { 'x-api-key': key });
    expect(reply.status).toBe(503);
    expectErrorBody(reply, 'unavailable');
    expect(reply.headers.get('retry-after')).toBe('1');
  });

  it('a subject the host names is admitted by limits.admit; a policy limits subjects without an account', async () => {
    const byAccount = await app({ subject: (h) => (typeof h['x-account'] === 'string' ? h['x-account'] : null), surface: 'web', ietfHeaders: true });
    const { subject } = await account();
    const ok = await get(byAccount, { 'x-account': subject });
    expect(ok.status).toBe(200);
    expect(ok.body.pass).toMatchObject({ subject, surface: 'web' });
    expect(ok.headers.get('ratelimit-policy')).toBe('"web";q=30;w=60');
    expect((await get(byAccount)).status).toBe(401);
    // A subject with no account proves nothing either.
    expect((await get(byAccount, { 'x-account': 'nobody_here' })).status).toBe(401);

    const byIp = await app({ subject: () => `ip:198.51.100.${apps.length}`, policy: 'signin' });
    expect((await get(byIp)).status).toBe(200);
    expect((await get(byIp)).headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await get(byIp)).status).toBe(429);
  });

  it('skip lets a request through uncounted, and onDenied answers a refusal instead of the default reply', async () => {
    const base = await app({ key: apiKey, skip: (h) => h['x-skip'] === '1', onDenied: true });
    const skipped = await get(base, { 'x-skip': '1' });
    expect(skipped.status).toBe(200);
    expect(skipped.body.pass).toBeNull();
    expect(skipped.headers.get('x-ratelimit-limit')).toBeNull();
    const denied = await get(base);
    expect(denied).toMatchObject({ status: 299, body: { custom: 'unauthorized', status: 401 } });
  });

  it('the rate-limit headers stay on the response when the endpoint fails (errors included)', async () => {
    const base = await app({ key: apiKey });
    const { key } = await account();
    const reply = await get(base, { 'x-api-key': key }, '/boom');
    expect(reply.status).toBe(500);
    expect(reply.headers.get('x-ratelimit-limit')).toBe('30');
  });

  it('refuses options without exactly one of key or subject, or a policy with key, when the middleware is made', async () => {
    expect(() => makeApp(tg, {})).toThrowError(/exactly one of key/);
    expect(() => makeApp(tg, { key: apiKey, subject: apiKey })).toThrowError(/exactly one of key/);
    expect(() => makeApp(tg, { key: apiKey, policy: 'signin' })).toThrowError(/policy/);
  });
});

describe('checkRequest: the same step on any framework (plain node:http here)', () => {
  let io: Redis;
  let tg: Tollgate;
  let server: App;

  beforeAll(async () => {
    io = await connectIoredis();
    tg = createTollgate({ redis: fromIoredis(io), prefix: uniquePrefix('check-request') });
    const options = { tollgate: tg, key: (req: IncomingMessage) => apiKey(req.headers), credits: (req: IncomingMessage) => Number(req.headers['x-credits'] ?? 0) };
    checkRateLimitOptions(options);
    server = await listen(async (req, res) => {
      const decision = await checkRequest(options, req);
      const { status, headers, body } = 'refusal' in decision ? decision.refusal.reply : { status: 200, headers: decision.pass.headers, body: { subject: decision.pass.subject } };
      res.writeHead(status, { ...headers, 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  afterAll(async () => {
    await server.close();
    await io.quit();
  });

  it('passes a valid key with its headers, refuses a missing key (401) and a short balance (402) with the error body', async () => {
    const subject = accountId('plain');
    await tg.accounts.create(subject, { plan: 'free' });
    const { key } = await tg.keys.issue(subject);
    const ok = await fetch(`${server.url}/`, { headers: { 'x-api-key': key } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ subject });
    expect(ok.headers.get('x-ratelimit-remaining')).toBe('29');
    const none = await fetch(`${server.url}/`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { type: string } }).error.type).toBe('unauthorized');
    const short = await fetch(`${server.url}/`, { headers: { 'x-api-key': key, 'x-credits': '31' } });
    expect(short.status).toBe(402);
    expect(((await short.json()) as { error: object }).error).toMatchObject({ type: 'insufficient_quota', remaining: 30, needed: 31 });
  });

  it('refuses options that name neither key nor subject', () => {
    expect(() => checkRateLimitOptions({ tollgate: tg } as never)).toThrowError(/exactly one of key/);
  });
});
