/**
 * The whole example service, framework-free: tollgate over node-redis (plans, API keys and
 * sessions, the failed-auth policy, the deny cache), the fake platform, the demo OAuth
 * verifier, the job store and runner, and the route table. The Express and Koa adapters only
 * translate requests and replies to and from it.
 */
import { createTollgate, type PlanTable, type Tollgate } from 'tollgate';
import { RecentCallers } from './auth/credentials.ts';
import { bodyKind, type BodyKind } from './http/body.ts';
import { replyForFrameworkError, replyForThrown } from './http/errors.ts';
import { FailedAuth, failedAuthPolicy, FAILED_AUTH_PER_MINUTE } from './auth/failedAuth.ts';
import { isCharged } from './auth/guard.ts';
import { openAccount } from './api/admin.ts';
import { REFUNDABLE_FOR_MS } from './api/credits.ts';
import { IDEMPOTENCY_LOCK_MS } from './jobs/createJob.ts';
import { fail, isDecodablePath, newRequestId, type ApiRequest, type HttpReply } from './http/handler.ts';
import { JobStore } from './jobs/jobStore.ts';
import { mcpHandler } from './mcp/server.ts';
import { MESSAGES } from './http/messages.ts';
import { createDemoOAuth, type DemoOAuth, type TokenVerifier } from './auth/oauth.ts';
import { EXAMPLE_PLANS, withLowBalance } from './plans.ts';
import { createFakePlatform, type VideoPlatform } from './platform/index.ts';
import { connectRedis, type ClusterNode, type RedisTarget } from './redis/client.ts';
import { buildRoutes, type Route } from './routes.ts';
import { TranscriptReceipts } from './web/receipts.ts';
import { createSite, type SiteOptions } from './web/site.ts';
import { JobRunner, type WorkerMode } from './jobs/worker.ts';
import { checkWebhookOptions, WebhookSender, type WebhookOptions } from './events/webhooks.ts';
import { LowBalanceConsumer, LowBalanceRecord } from './events/lowBalance.ts';

export interface ServiceOptions {
  /** One Redis server; or give redisClusterNodes instead. */
  redisUrl?: string;
  /** Seed masters of a Redis Cluster (REDIS_CLUSTER_NODES); every key the service writes is hash-tagged for it. */
  redisClusterNodes?: ClusterNode[];
  /**
   * How long any Redis call may take, tollgate's scripts and the service's own commands alike
   * (job store, enqueue); a slower call fails closed with 503 unavailable
   * (docs/example-service.md#errors). Default 2000 ms.
   */
  timeoutMs?: number;
  /** Key prefix of tollgate's keys; the example's own keys use `<prefix>:ex`. Default "tg". */
  prefix?: string;
  /** Injected clock (tests); default the Redis server's TIME. */
  clock?: () => number;
  /** Enables /admin with `Authorization: Bearer <adminToken>`. */
  adminToken?: string;
  worker?: WorkerMode;
  platform?: VideoPlatform;
  /**
   * Default the service's own table (plans.ts; docs/example-service.md#plans). A plan without
   * `events` gets the service's two low-balance thresholds (withLowBalance).
   */
  plans?: PlanTable;
  /**
   * Failed key checks (401s) a client IP may make per minute; past it the IP gets 429 until
   * the minute ends (auth/failedAuth.ts). Default 10 (FAILED_AUTH_PER_MINUTE).
   */
  failedAuthPerMinute?: number;
  /** Also send the IETF RateLimit-Policy / RateLimit fields. */
  ietfHeaders?: boolean;
  /** Lapsed-job sweep period; 0 turns it off. Default 30 s. */
  sweepEveryMs?: number;
  /** OAuth hook; default the demo verifier whose tokens the admin endpoint mints. */
  verifyToken?: TokenVerifier;
  /**
   * Free endpoints may fail open: on, the free catalog reads (search, video details,
   * channel and playlist listings) are still served while Redis is unreachable, uncounted and
   * without rate-limit headers, to callers whose credential was verified in the last 5 minutes
   * (or an OAuth token the hook verifies without Redis). Everything else stays closed (503).
   * Default off (FAIL_OPEN_FREE=1).
   */
  failOpenFreeEndpoints?: boolean;
  /**
   * Where the website is (web/site.ts): its public URL (PUBLIC_URL), or whether to believe a
   * proxy's X-Forwarded-Proto / X-Forwarded-Host (TRUST_PROXY=1). Default: the request's own
   * Host and TLS.
   */
  site?: SiteOptions;
  /**
   * Replicas that must confirm each credit movement before it is acknowledged (tollgate's
   * durability option: WAIT on connections of its own). A movement they do not confirm within
   * 500 ms is retried once with its operation id, which applies once, then answered 503
   * unavailable with Retry-After. Default 0: off (DURABLE_REPLICAS).
   */
  durableReplicas?: number;
  /**
   * Delivers tollgate's events as signed webhooks (events/webhooks.ts; docs/example-service.md#webhooks):
   * WEBHOOK_URL and WEBHOOK_SECRET. Default off.
   */
  webhooks?: WebhookOptions;
}

/** Days of per-day credit history tollgate keeps (createTollgate's default), for the dashboard's chart. */
const HISTORY_DAYS = 92;

export type IncomingRequest = Omit<ApiRequest, 'requestId'>;

export interface Service {
  /**
   * The route table. A GET route also takes HEAD (both frameworks route HEAD to GET) unless it
   * charges credits: then HEAD is 405, as it would pay for a body it never sends.
   */
  routes: Array<Omit<Route, 'handler'> & { handle(request: IncomingRequest): Promise<HttpReply> }>;
  /**
   * Every path of the table with the methods it serves (`Allow`). Adapters register each after
   * the routes, for every method, and answer what reaches it with methodNotAllowed: 405 with
   * Allow, in the error body (OPTIONS, PATCH, PUT, TRACE, ... on a known path).
   */
  paths: Array<{ path: string; allow: string }>;
  methodNotAllowed(request: IncomingRequest, allow: string): HttpReply;
  notFound(request: IncomingRequest): HttpReply;
  /**
   * Adapters ask this before routing: the 400 for a request no route can read (a path that is
   * not valid percent-encoding, which Express would refuse with its own page and Koa would pass
   * on raw), else undefined. Both servers so answer it the same way.
   */
  screen(request: IncomingRequest): HttpReply | undefined;
  /** The error reply for an error the framework raised outside the routes (its error handler). */
  failed(request: IncomingRequest, error: unknown): HttpReply;
  tollgate: Tollgate;
  oauth: DemoOAuth;
  /** Creates an account with a fresh API key (the key is shown once, here). */
  createAccount(plan: string): Promise<{ accountId: string; apiKey: string }>;
  close(): Promise<void>;
}

export async function createService(options: ServiceOptions): Promise<Service> {
  const prefix = options.prefix ?? 'tg';
  const timeoutMs = options.timeoutMs ?? 2_000;
  const target = redisTarget(options);
  const site = createSite(options.site);
  if (options.webhooks !== undefined) checkWebhookOptions(options.webhooks);
  const redis = await connectRedis(target, timeoutMs);
  const ietfHeaders = options.ietfHeaders ?? false;
  const plans = withLowBalance(options.plans ?? EXAMPLE_PLANS);
  const tollgate = createTollgate({
    redis: redis.scripts,
    prefix,
    clock: options.clock,
    plans,
    policies: failedAuthPolicy(options.failedAuthPerMinute ?? FAILED_AUTH_PER_MINUTE),
    history: { days: HISTORY_DAYS },
    // A denied key, and an IP over its failed checks, are answered from memory until the window resets.
    denyCache: true,
    timeoutMs,
    idempotencyLockMs: IDEMPOTENCY_LOCK_MS,
    // A charge's operation id is its request id, kept this long so support can refund it by that id (api/credits.ts).
    operationTtlMs: REFUNDABLE_FOR_MS,
    durability: options.durableReplicas ? { replicas: options.durableReplicas } : false,
  });
  const platform = options.platform ?? createFakePlatform();
  const store = new JobStore(redis, `${prefix}:ex`);
  const oauth = createDemoOAuth();
  const runner = new JobRunner(
    { tollgate, platform, store },
    // A hash tag, so that BullMQ's keys share a slot on a cluster.
    { mode: options.worker ?? 'auto', redis: target, queuePrefix: `{${prefix}:bull}`, timeoutMs, sweepEveryMs: options.sweepEveryMs },
  );
  runner.start();
  const lowBalance = new LowBalanceRecord(redis, `${prefix}:ex`);
  // Two consumer groups, each of which gets every event: the dashboard's record, and the webhooks.
  const consumers = [new LowBalanceConsumer(tollgate, lowBalance), ...(options.webhooks === undefined ? [] : [new WebhookSender(tollgate, options.webhooks)])];
  for (const consumer of consumers) consumer.start();
  const verifyToken = options.verifyToken ?? oauth.verify;
  const failOpenFree = options.failOpenFreeEndpoints ?? false;
  const deps = {
    tollgate,
    platform,
    failedAuth: new FailedAuth(tollgate, ietfHeaders),
    store,
    runner,
    oauth,
    verifyToken,
    ietfHeaders,
    adminToken: options.adminToken,
    failOpenFree,
    recentCallers: failOpenFree ? new RecentCallers() : undefined,
    site,
    plans,
    receipts: new TranscriptReceipts(redis, `${prefix}:ex`),
    historyKeptDays: HISTORY_DAYS,
    lowBalance,
  };
  const routes = buildRoutes({ ...deps, mcp: mcpHandler(deps) });
  const withId = (request: IncomingRequest): ApiRequest => ({ ...request, requestId: newRequestId() });
  const allowed = allowedMethods(routes);
  const methodNotAllowed = (request: IncomingRequest, allow: string): HttpReply =>
    fail(withId(request), 'method_not_allowed', MESSAGES.methodNotAllowed(request.method, allow), { headers: { Allow: allow } });

  return {
    routes: routes.map(({ method, path, handler, bodies = ['json'] }) => {
      const headRefused = method === 'GET' && isCharged(handler);
      return {
        method,
        path,
        bodies,
        async handle(request) {
          if (headRefused && request.method === 'HEAD') return methodNotAllowed(request, allowed.get(path)!);
          const withRequestId = withId(readable(request, bodies));
          const reply = await handler(withRequestId).catch((error: unknown) => replyForThrown(withRequestId, error));
          return { ...reply, headers: { 'X-Request-Id': withRequestId.requestId, ...reply.headers } };
        },
      };
    }),
    paths: [...allowed].map(([path, allow]) => ({ path, allow })),
    methodNotAllowed,
    notFound: (request) => fail(withId(request), 'not_found', MESSAGES.noRoute(request.method, request.path)),
    screen: (request) =>
      isDecodablePath(request.path) ? undefined : fail(withId(request), 'invalid_request', MESSAGES.unreadablePath, { extra: { param: 'path' } }),
    failed: (request, error) => replyForFrameworkError(withId(request), error),
    tollgate,
    oauth,
    async createAccount(plan) {
      const { accountId, apiKey } = await openAccount(tollgate, plan);
      return { accountId, apiKey };
    },
    async close() {
      // The consumers first: they stop between two events (a webhook between two tries) and leave the rest to tollgate.
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      await runner.close();
      await tollgate.close();
      await redis.close();
    },
  };
}

/** The request as the route sees it: a body of a media type the route does not read is 415, whatever else was wrong with it. */
function readable(request: IncomingRequest, bodies: ReadonlyArray<BodyKind>): IncomingRequest {
  if (request.bodyType === undefined) return request;
  const kind = bodyKind(request.bodyType);
  if (kind !== undefined && bodies.includes(kind)) return request;
  const { body: _unread, ...rest } = request;
  return { ...rest, body: undefined, bodyError: { type: 'unsupported_media_type', message: MESSAGES.bodyMediaType(bodies, request.bodyType) } };
}

/** Each path's Allow header: its methods, and HEAD beside a GET that charges nothing. */
function allowedMethods(routes: Route[]): Map<string, string> {
  const byPath = new Map<string, Set<string>>();
  for (const { method, path, handler } of routes) {
    const methods = byPath.get(path) ?? new Set<string>();
    methods.add(method);
    if (method === 'GET' && !isCharged(handler)) methods.add('HEAD');
    byPath.set(path, methods);
  }
  const order = ['GET', 'HEAD', 'POST', 'DELETE'];
  return new Map([...byPath].map(([path, methods]) => [path, order.filter((m) => methods.has(m)).join(', ')]));
}

function redisTarget(options: ServiceOptions): RedisTarget {
  const nodes = options.redisClusterNodes;
  if (nodes !== undefined && nodes.length > 0) {
    if (options.redisUrl !== undefined) throw new Error('Give redisUrl or redisClusterNodes, not both');
    return { clusterNodes: nodes };
  }
  if (options.redisUrl === undefined) throw new Error('createService needs redisUrl or redisClusterNodes');
  return { url: options.redisUrl };
}
