// tollgate/express, tollgate/koa, tollgate/fastify and tollgate/hono: one middleware per
// framework that checks a key (or a subject the host names) and counts the request in one
// round trip, sets the rate-limit headers and answers 401 / 429 / 402 / 503 with the error
// body (docs/errors.md); checkRequest is the same step for any other framework. Real apps,
// real HTTP, the test Redis.
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Response as ExpressResponse } from 'express';
import Fastify, { type FastifyContextConfig, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Context as HonoContext } from 'hono';
import type { Context as KoaContext } from 'koa';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { rateLimit as fastifyRateLimit, type FastifyRouteRateLimit } from '../src/fastify.ts';
import { createTollgate, fromIoredis, type Tollgate } from '../src/index.ts';
import { checkRateLimitOptions, checkRequest, type RateLimitPass } from '../src/http.ts';
import { FRAMEWORKS, get, listen, type App, type Headers, type Options } from './helpers/frameworks.ts';
import { connectIoredis, uniquePrefix } from './helpers/redis.ts';
import { accountId, ManualClock } from './helpers/tollgate.ts';
import { EXAMPLE_PLANS } from './helpers/plans.ts';

const apiKey = (h: Headers) => (typeof h['x-api-key'] === 'string' ? h['x-api-key'] : null);

describe.each(
  FRAMEWORKS.flatMap(
    ([name, makeApp]) =>
      [
        [name, makeApp, 'redis'],
        [name, makeApp, 'memory'],
      ] as const,
  ),
)('tollgate/%s rateLimit on %s', (_name, makeApp, backend) => {
  let io: Redis | undefined;
  let tg: Tollgate;
  let sends = 0;
  const clock = new ManualClock();
  const apps: App[] = [];

  beforeAll(async () => {
    const policies = { signin: { api: [{ limit: 2, windowMs: 60_000 }] } };
    if (backend === 'memory') {
      tg = createTollgate({ plans: EXAMPLE_PLANS, memory: true, clock: clock.fn, policies });
      return;
    }
    const client = await connectIoredis();
    io = client;
    // Counts what reaches Redis, so a request's round trips can be told.
    const counted = { call: (command: string, ...args: string[]) => ((sends += 1), client.call(command, ...args)) };
    tg = createTollgate({ plans: EXAMPLE_PLANS, redis: fromIoredis(counted), prefix: uniquePrefix('middleware'), clock: clock.fn, policies });
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await io?.quit();
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
    if (backend === 'redis') expect(sends - before).toBe(1);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('x-ratelimit-limit')).toBe('30');
    expect(reply.headers.get('x-ratelimit-remaining')).toBe('28');
    expect(Number(reply.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
    expect(reply.body.pass).toMatchObject({ subject, surface: 'api', keyId: tg.keys.parse(key)!.keyId, admission: { ok: true, allowed: true } });
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
    expect((await get(base, { 'x-api-key': key })).body.pass.admission.credits).toEqual({ sufficient: true, balance: 30, needed: 1, available: 30 });
    await tg.credits.charge(subject, { required: 30 });
    const reply = await get(base, { 'x-api-key': key });
    expect(reply.status).toBe(402);
    expectErrorBody(reply, 'insufficient_quota');
    expect(reply.body.error).toMatchObject({ remaining: 0, needed: 1 });
    expect(reply.headers.get('x-ratelimit-remaining')).toBe('28');
  });

  it.skipIf(backend === 'memory')('the quota store unreachable: 503 unavailable with Retry-After (fail closed)', async () => {
    const down = createTollgate({ plans: EXAMPLE_PLANS, redis: fromIoredis({ call: () => Promise.reject(new Error('connect ECONNREFUSED')) }) });
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

  // Fastify starts its plugins when the app starts (ready, listen): that is its start-up.
  const made = (options: Options) => async () => void (await makeApp(tg, options)).close();

  it('refuses options without exactly one of key or subject, or a policy with key, when the middleware is made', async () => {
    await expect(made({})).rejects.toThrowError(/exactly one of key/);
    await expect(made({ key: apiKey, subject: apiKey })).rejects.toThrowError(/exactly one of key/);
    await expect(made({ key: apiKey, policy: 'signin' })).rejects.toThrowError(/policy/);
  });

  it('refuses a surface no plan has, a policy not configured and a surface the policy lacks at start-up, naming the option and its value', async () => {
    await expect(made({ key: apiKey, surface: 'serach' })).rejects.toThrowError(/surface "serach" is not a surface of any plan \(api, web\)/);
    await expect(made({ subject: apiKey, policy: 'signup' })).rejects.toThrowError(/policy "signup" is not one of createTollgate's policies \(signin\)/);
    await expect(made({ subject: apiKey, policy: 'signin', surface: 'web' })).rejects.toThrowError(/surface "web" is not a surface of policy "signin" \(api\)/);
    await expect(made({ key: apiKey, onStoreError: 'maybe' as never })).rejects.toThrowError(/onStoreError "maybe"/);
  });
});

describe('checkRequest: the same step on any framework (plain node:http here)', () => {
  let io: Redis;
  let tg: Tollgate;
  let server: App;

  beforeAll(async () => {
    io = await connectIoredis();
    tg = createTollgate({ plans: EXAMPLE_PLANS, redis: fromIoredis(io), prefix: uniquePrefix('check-request') });
    const options = {
      tollgate: tg,
      key: (req: IncomingMessage) => apiKey(req.headers),
      credits: (req: IncomingMessage) => Number(req.headers['x-credits'] ?? 0),
    };
    checkRateLimitOptions(options);
    server = await listen(async (req, res) => {
      const decision = await checkRequest(options, req);
      const { status, headers, body } =
        'refusal' in decision ? decision.refusal.reply : { status: 200, headers: decision.pass.headers, body: { subject: decision.pass.subject } };
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

  it('a decision says ok, and a refusal names its error type as the body does (reason is the same, under its former name)', async () => {
    const subject = accountId('plain');
    await tg.accounts.create(subject, { plan: 'free' });
    const { key } = await tg.keys.issue(subject);
    const request = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
    const options = {
      tollgate: tg,
      key: (req: IncomingMessage) => apiKey(req.headers),
      credits: (req: IncomingMessage) => Number(req.headers['x-credits'] ?? 0),
    };
    const passed = await checkRequest(options, request({ 'x-api-key': key }));
    expect(passed).toMatchObject({ ok: true, pass: { subject, admission: { ok: true } } });
    for (const [headers, type] of [
      [{}, 'unauthorized'],
      [{ 'x-api-key': key, 'x-credits': '31' }, 'insufficient_quota'],
    ] as const) {
      const decision = await checkRequest(options, request(headers));
      if (decision.ok) throw new Error('expected a refusal');
      expect(decision.refusal).toMatchObject({ type, reason: type, reply: { body: { error: { type } } } });
    }
  });

  it('refuses options that name neither key nor subject, or a surface or policy the tables lack, naming the option and its value', () => {
    expect(() => checkRateLimitOptions({ tollgate: tg } as never)).toThrowError(/exactly one of key/);
    const key = (req: IncomingMessage) => apiKey(req.headers);
    expect(() => checkRateLimitOptions({ tollgate: tg, key, surface: 'serach' })).toThrowError(/surface "serach"/);
    expect(() => checkRateLimitOptions({ tollgate: tg, subject: key, policy: 'signup' })).toThrowError(/policy "signup"/);
    // A surface worked out per request is checked per request.
    expect(() => checkRateLimitOptions({ tollgate: tg, key, surface: () => 'serach' })).not.toThrow();
  });
});

describe('tollgate/fastify: the scope that registers it, and per-route options', () => {
  let io: Redis;
  let tg: Tollgate;
  let app: FastifyInstance;
  let site: App;

  beforeAll(async () => {
    io = await connectIoredis();
    tg = createTollgate({ plans: EXAMPLE_PLANS, redis: fromIoredis(io), prefix: uniquePrefix('fastify') });
    app = Fastify();
    app.get('/before', async () => ({ pass: null }));
    // Not encapsulated: the hook reaches the routes the registering scope adds after it.
    await app.register(fastifyRateLimit, { tollgate: tg, key: (request) => apiKey(request.headers) });
    app.get('/counted', async (request) => ({ pass: request.tollgate ?? null }));
    app.get('/charged', { config: { rateLimit: { credits: 31 } } }, async (request) => ({ pass: request.tollgate ?? null }));
    app.get('/web', { config: { rateLimit: { surface: 'web', cost: 2 } } }, async (request) => ({ pass: request.tollgate ?? null }));
    app.get('/free', { config: { rateLimit: false } }, async (request) => ({ pass: request.tollgate ?? null }));
    await app.register(async (child) => {
      child.get('/child', async (request) => ({ pass: request.tollgate ?? null }));
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    site = { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
  });
  afterAll(async () => {
    await app.close();
    await io.quit();
  });

  async function key(): Promise<{ subject: string; key: string }> {
    const subject = accountId('fst');
    await tg.accounts.create(subject, { plan: 'free' });
    return { subject, key: (await tg.keys.issue(subject)).key };
  }

  it('checks the routes of the scope that registered it (and its children) added after it, not those before', async () => {
    const { subject, key: k } = await key();
    const headers = { 'x-api-key': k };
    expect((await get(site, {}, '/before')).status).toBe(200);
    expect((await get(site, {}, '/counted')).status).toBe(401);
    const child = await get(site, headers, '/child');
    expect(child.status).toBe(200);
    expect(child.body.pass).toMatchObject({ subject, surface: 'api' });
    expect(child.headers.get('x-ratelimit-remaining')).toBe('29');
  });

  it("lays a route's config.rateLimit over the plugin's options, and false leaves the route out", async () => {
    const { key: k } = await key();
    const headers = { 'x-api-key': k };
    const charged = await get(site, headers, '/charged');
    expect(charged.status).toBe(402);
    expect(charged.body.error).toMatchObject({ type: 'insufficient_quota', remaining: 30, needed: 31 });
    const web = await get(site, headers, '/web');
    expect(web.body.pass).toMatchObject({ surface: 'web' });
    expect(web.headers.get('x-ratelimit-remaining')).toBe('28');
    const free = await get(site, {}, '/free');
    expect(free).toMatchObject({ status: 200, body: { pass: null } });
    expect(free.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it('refuses a route whose own options name an unknown surface when the route is added', async () => {
    const other = Fastify();
    await other.register(fastifyRateLimit, { tollgate: tg, key: (request) => apiKey(request.headers) });
    expect(() => other.get('/x', { config: { rateLimit: { surface: 'serach' } } }, async () => ({}))).toThrowError(/surface "serach"/);
    await other.close();
  });
});

describe('the pass is typed on every framework (module augmentation; checked by tsc)', () => {
  it('res.locals.tollgate, ctx.state.tollgate, request.tollgate and c.get("tollgate") are RateLimitPass', () => {
    // Never called: the compiler checks the types.
    const typed = (res: ExpressResponse, ctx: KoaContext, request: FastifyRequest, c: HonoContext) => {
      expectTypeOf(res.locals.tollgate).toEqualTypeOf<RateLimitPass | undefined>();
      expectTypeOf(ctx.state.tollgate).toEqualTypeOf<RateLimitPass | undefined>();
      expectTypeOf(request.tollgate).toEqualTypeOf<RateLimitPass | undefined>();
      expectTypeOf(c.get('tollgate')).toEqualTypeOf<RateLimitPass>();
      expectTypeOf<FastifyContextConfig['rateLimit']>().toEqualTypeOf<FastifyRouteRateLimit | undefined>();
    };
    expect(typeof typed).toBe('function');
  });
});
