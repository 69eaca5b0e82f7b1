/**
 * `tollgate/express`: rate limits, API keys and the credit pre-check as one Express
 * middleware. It uses Express's types only: nothing from Express is loaded at run
 * time, so any Express 4 or 5 app can use it.
 *
 * @module tollgate/express
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
// The tollgate/http entry at run time (tsup.config.ts), not a second copy of the library.
import { checkRateLimitOptions, checkRequest, type RateLimitOptions, type RateLimitPass, type RateLimitRefusal } from './http.ts';

export type { PerRequest, RateLimitOptions, RateLimitPass, RateLimitRefusal, StoreErrorMode } from './http.ts';

declare global {
  namespace Express {
    interface Locals {
      /** What a request that passed carries on (tollgate/express's rateLimit). */
      tollgate?: RateLimitPass;
    }
  }
}

/** The options of the Express `rateLimit` middleware. */
export interface ExpressRateLimitOptions extends RateLimitOptions<Request> {
  /**
   * Answers a refused request instead of the default reply (`refusal.reply`: status, headers
   * and error body). The request goes no further either way.
   */
  onDenied?: (req: Request, res: Response, refusal: RateLimitRefusal) => void | Promise<void>;
}

/**
 * An Express middleware that checks the request's API key (or the subject the host names)
 * and counts it in one Redis round trip. A request that passes gets the rate-limit headers
 * and `res.locals.tollgate` ({@link RateLimitPass}); one that does not is answered with 401,
 * 429 (with Retry-After), 402 (credits short) or 503 (the quota store is unreachable: fail
 * closed), with the error body. Other errors (a surface no plan has) go to `next(error)`.
 *
 * @example
 * ```ts
 * import express from "express";
 * import { createClient } from "redis";
 * import { createTollgate, fromNodeRedis } from "tollgate";
 * import { plans } from "./plans.ts"; // the app's PlanTable
 * import { rateLimit } from "tollgate/express";
 *
 * const client = await createClient().on("error", (error) => console.error(error)).connect(); // no listener: an outage ends the process
 * const tollgate = createTollgate({ redis: fromNodeRedis(client), plans });
 * const app = express();
 * const key = (req: express.Request) => req.get("x-api-key") ?? null;
 *
 * // A charged endpoint: the key checked, the request counted and 1 credit looked for, in one round trip.
 * app.get("/reports/:id", rateLimit({ tollgate, key, credits: 1 }), async (req, res) => {
 *   const { subject } = res.locals.tollgate!; // the key's account
 *   await tollgate.credits.charge(subject, { required: 1, operationId: req.params.id });
 *   res.json({ id: req.params.id });
 * });
 * // Every other route counts one request.
 * app.use(rateLimit({ tollgate, key }));
 * ```
 */
export function rateLimit(options: ExpressRateLimitOptions): RequestHandler {
  checkRateLimitOptions(options);
  return (req: Request, res: Response, next: NextFunction) => {
    if (options.skip?.(req)) return next();
    checkRequest(options, req)
      .then(async (decision) => {
        if (decision.ok) {
          res.locals.tollgate = decision.pass;
          res.set(decision.pass.headers);
          const release = decision.pass.release;
          if (release) {
            res.once('finish', release);
            res.once('close', release);
          }
          return next();
        }
        if (options.onDenied) return options.onDenied(req, res, decision.refusal);
        const { reply } = decision.refusal;
        res.status(reply.status).set(reply.headers).send(JSON.stringify(reply.body));
      })
      .catch(next);
  };
}
