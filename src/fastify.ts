/**
 * `tollgate/fastify`: rate limits, API keys and the credit pre-check as one Fastify plugin. It
 * uses Fastify's types only: nothing from Fastify is loaded at run time.
 *
 * @module tollgate/fastify
 */
import type { FastifyPluginCallback, FastifyReply, FastifyRequest, onRequestHookHandler, RouteOptions } from 'fastify';
// The tollgate/http entry at run time (tsup.config.ts), not a second copy of the library.
import { checkRateLimitOptions, checkRequest, type RateLimitOptions, type RateLimitPass, type RateLimitRefusal } from './http.ts';

export type { PerRequest, RateLimitOptions, RateLimitPass, RateLimitRefusal, StoreErrorMode } from './http.ts';

/** The options of the Fastify `rateLimit` plugin; the functions take Fastify's request. */
export interface FastifyRateLimitOptions extends RateLimitOptions<FastifyRequest> {
  /**
   * Answers a refused request instead of the default reply (`refusal.reply`: status, headers
   * and error body). The request goes no further either way.
   */
  onDenied?: (request: FastifyRequest, reply: FastifyReply, refusal: RateLimitRefusal) => void | Promise<void>;
}

/**
 * A route's own options (`config: { rateLimit }`), laid over the plugin's; `false` leaves the
 * route out.
 */
export type FastifyRouteRateLimit = Partial<FastifyRateLimitOptions> | false;

declare module 'fastify' {
  interface FastifyRequest {
    /** What a request that passed carries on (tollgate/fastify's rateLimit). */
    tollgate?: RateLimitPass;
  }
  interface FastifyContextConfig {
    /** This route's tollgate options over the plugin's, or false to leave it out. */
    rateLimit?: FastifyRouteRateLimit;
  }
}

/**
 * A Fastify plugin that checks each request's API key (or the subject the host names) and
 * counts it in one Redis round trip, on the routes of the scope that registers it (like
 * fastify-plugin, it is not encapsulated) registered after it. A route's
 * `config: { rateLimit: {...} }` is laid over the plugin's options (`false`: not checked). A
 * request that passes gets the rate-limit headers and `request.tollgate`
 * ({@link RateLimitPass}); one that does not is answered with 401, 429 (with Retry-After), 402
 * (credits short) or 503 (the quota store is unreachable; see `onStoreError`), with the error
 * body. Other errors go to Fastify's error handler. Options are checked when routes are added.
 *
 * @example
 * ```ts
 * import Fastify from "fastify";
 * import { rateLimit } from "tollgate/fastify";
 *
 * const app = Fastify();
 * await app.register(rateLimit, { tollgate, key: (request) => String(request.headers["x-api-key"] ?? "") || null });
 * app.get("/reports/:id", { config: { rateLimit: { credits: 1 } } }, async (request) => ({ account: request.tollgate!.subject }));
 * ```
 */
export const rateLimit: FastifyPluginCallback<FastifyRateLimitOptions> = Object.assign(
  (fastify: Parameters<FastifyPluginCallback<FastifyRateLimitOptions>>[0], options: FastifyRateLimitOptions, done: (error?: Error) => void) => {
    const own = options;
    try {
      checkRateLimitOptions(own);
    } catch (error) {
      // Fastify's start-up (ready, listen) rejects with it.
      return done(error as Error);
    }
    if (!fastify.hasRequestDecorator('tollgate')) fastify.decorateRequest('tollgate', undefined);
    fastify.addHook('onRoute', (route: RouteOptions) => {
      const routeOptions = route.config?.rateLimit;
      if (routeOptions === false) return;
      const merged: FastifyRateLimitOptions = routeOptions ? { ...own, ...routeOptions } : own;
      if (routeOptions) checkRateLimitOptions(merged);
      const hook = onRequest(merged);
      route.onRequest =
        route.onRequest === undefined ? [hook] : Array.isArray(route.onRequest) ? [...route.onRequest, hook] : [route.onRequest as onRequestHookHandler, hook];
    });
    done();
  },
  // fastify-plugin's convention: the plugin's hooks apply to the scope that registers it.
  { [Symbol.for('skip-override')]: true, [Symbol.for('fastify.display-name')]: 'tollgate' },
);

function onRequest(options: FastifyRateLimitOptions): onRequestHookHandler {
  return function tollgateRateLimit(request, reply, done) {
    if (options.skip?.(request)) return done();
    checkRequest(options, request)
      .then((decision) => {
        if (decision.ok) {
          request.tollgate = decision.pass;
          reply.headers(decision.pass.headers);
          const release = decision.pass.release;
          if (release) {
            reply.raw.once('finish', release);
            reply.raw.once('close', release);
          }
          return done();
        }
        if (options.onDenied) return options.onDenied(request, reply, decision.refusal);
        const { status, headers, body } = decision.refusal.reply;
        reply.code(status).headers(headers).send(JSON.stringify(body));
      })
      .catch(done);
  };
}
