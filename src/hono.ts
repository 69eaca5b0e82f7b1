/**
 * `tollgate/hono`: rate limits, API keys and the credit pre-check as one Hono middleware. It
 * uses Hono's types only: nothing from Hono is loaded at run time.
 *
 * @module tollgate/hono
 */
import type { Context, MiddlewareHandler } from 'hono';
// The tollgate/http entry at run time (tsup.config.ts), not a second copy of the library.
import { checkRateLimitOptions, checkRequest, type RateLimitOptions, type RateLimitPass, type RateLimitRefusal } from './http.ts';

export type { PerRequest, RateLimitOptions, RateLimitPass, RateLimitRefusal, StoreErrorMode } from './http.ts';

/** The options of the Hono `rateLimit` middleware; the functions take Hono's `c`. */
export interface HonoRateLimitOptions extends RateLimitOptions<Context> {
  /**
   * Answers a refused request instead of the default reply (`refusal.reply`: status, headers
   * and error body). The request goes no further either way.
   */
  onDenied?: (c: Context, refusal: RateLimitRefusal) => Response | Promise<Response>;
}

/** The variables the middleware sets: `c.get("tollgate")`. */
export type TollgateVariables = { tollgate: RateLimitPass };

declare module 'hono' {
  interface ContextVariableMap {
    /** What a request that passed carries on (tollgate/hono's rateLimit); unset when it was skipped. */
    tollgate: RateLimitPass;
  }
}

/**
 * A Hono middleware that checks the request's API key (or the subject the host names) and
 * counts it in one Redis round trip. A request that passes gets the rate-limit headers and
 * `c.get("tollgate")` ({@link RateLimitPass}); one that does not is answered with 401, 429
 * (with Retry-After), 402 (credits short) or 503 (the quota store is unreachable; see
 * `onStoreError`), with the error body. Other errors are thrown, to Hono's onError.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { rateLimit } from "tollgate/hono";
 *
 * const app = new Hono();
 * app.use("/api/*", rateLimit({ tollgate, key: (c) => c.req.header("x-api-key") ?? null, credits: 1 }));
 * app.get("/api/reports/:id", (c) => c.json({ account: c.get("tollgate").subject }));
 * ```
 */
export function rateLimit(options: HonoRateLimitOptions): MiddlewareHandler<{ Variables: TollgateVariables }> {
  checkRateLimitOptions(options);
  return async function tollgateRateLimit(c, next) {
    if (options.skip?.(c)) return next();
    const decision = await checkRequest(options, c);
    if (!decision.ok) {
      if (options.onDenied) return options.onDenied(c, decision.refusal);
      const { status, headers, body } = decision.refusal.reply;
      return new Response(JSON.stringify(body), { status, headers });
    }
    c.set('tollgate', decision.pass);
    // Prepared headers: Hono adds them to whatever response the route (or onError) makes.
    for (const name in decision.pass.headers) c.header(name, decision.pass.headers[name]);
    try {
      await next();
    } finally {
      // Hono has the response once next() is done (a streamed body may still be going).
      await decision.pass.release?.();
    }
  };
}
