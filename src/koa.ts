/**
 * `tollgate/koa`: rate limits, API keys and the credit pre-check as one Koa middleware. It
 * uses Koa's types only: nothing from Koa is loaded at run time.
 *
 * @module tollgate/koa
 */
import type { Context, Middleware, Next } from 'koa';
// The tollgate/http entry at run time (tsup.config.ts), not a second copy of the library.
import { checkRateLimitOptions, checkRequest, type RateLimitOptions, type RateLimitPass, type RateLimitRefusal } from './http.ts';

export type { PerRequest, RateLimitOptions, RateLimitPass, RateLimitRefusal, StoreErrorMode } from './http.ts';

declare module 'koa' {
  interface DefaultState {
    /** What a request that passed carries on (tollgate/koa's rateLimit). */
    tollgate?: RateLimitPass;
  }
}

/** The options of the Koa `rateLimit` middleware; the functions take Koa's `ctx`. */
export interface KoaRateLimitOptions extends RateLimitOptions<Context> {
  /**
   * Answers a refused request instead of the default reply (`refusal.reply`: status, headers
   * and error body). The request goes no further either way.
   */
  onDenied?: (ctx: Context, refusal: RateLimitRefusal) => void | Promise<void>;
}

/**
 * A Koa middleware that checks the request's API key (or the subject the host names) and
 * counts it in one Redis round trip. A request that passes gets the rate-limit headers and
 * `ctx.state.tollgate` ({@link RateLimitPass}); they stay on the response when a later
 * middleware throws (as `error.headers`, which Koa's error handler sends). One that does not
 * pass is answered with 401, 429 (with Retry-After), 402 (credits short) or 503 (the quota
 * store is unreachable: fail closed), with the error body. Other errors are thrown.
 *
 * @example
 * ```ts
 * import Koa from "koa";
 * import { createClient } from "redis";
 * import { createTollgate, fromNodeRedis } from "tollgate";
 * import { plans } from "./plans.ts"; // the app's PlanTable
 * import { rateLimit } from "tollgate/koa";
 *
 * const client = await createClient().on("error", (error) => console.error(error)).connect(); // no listener: an outage ends the process
 * const tollgate = createTollgate({ redis: fromNodeRedis(client), plans });
 * const app = new Koa();
 * app.use(rateLimit({ tollgate, key: (ctx) => ctx.get("x-api-key") || null, credits: 1 }));
 * app.use(async (ctx) => {
 *   const { subject } = ctx.state.tollgate!; // the key's account
 *   await tollgate.credits.charge(subject, { required: 1 });
 *   ctx.body = { ok: true };
 * });
 * ```
 */
export function rateLimit(options: KoaRateLimitOptions): Middleware {
  checkRateLimitOptions(options);
  return async (ctx: Context, next: Next) => {
    if (options.skip?.(ctx)) return next();
    const decision = await checkRequest(options, ctx);
    if (!decision.ok) {
      if (options.onDenied) return options.onDenied(ctx, decision.refusal);
      const { reply } = decision.refusal;
      ctx.status = reply.status;
      ctx.set(reply.headers);
      ctx.body = JSON.stringify(reply.body);
      return;
    }
    const { headers, release } = decision.pass;
    ctx.state.tollgate = decision.pass;
    ctx.set(headers);
    if (release) {
      ctx.res.once('finish', release);
      ctx.res.once('close', release);
    }
    try {
      await next();
    } catch (error) {
      // Koa's error handler clears the response's headers and then sets error.headers.
      if (error !== null && typeof error === 'object' && Object.isExtensible(error)) {
        const carried = error as { headers?: Record<string, string> };
        carried.headers = { ...headers, ...carried.headers };
      }
      throw error;
    }
  };
}
