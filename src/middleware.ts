/**
 * What tollgate/express, tollgate/koa, tollgate/fastify and tollgate/hono share, and what a
 * host on any other framework calls itself (checkRequest): one request checked with the
 * framework left out; the example servers' guard takes its decision from here too. A key is
 * verified together with the admit (keys.verify: one round trip); a subject the host already
 * knows is admitted with limits.admit. The answer is either the rate-limit headers to send
 * with the endpoint's response, or the error reply to send instead: 401 (no rate-limit
 * headers), 429, 402 or 503 (the quota store unreachable; `onStoreError` may decide otherwise,
 * see src/storeError.ts). A surface or policy no table has is refused when the options are
 * checked, at start-up; one worked out per request is refused then, as the host's mistake.
 */
import { InvalidInputError, isTollgateError } from "./errors.ts";
import { errorReply, insufficientReply, newRequestId, rateLimitedReply, rateLimitHeaders, type HttpReply } from "./http.ts";
import type { Admission, Allowed } from "./limits.ts";
import { rememberWindows, storeErrorMode, whenStoreFails, type StoreErrorMode } from "./storeError.ts";
import type { Tollgate } from "./tollgate.ts";

export type { StoreErrorMode };

/** A value of the middleware options: fixed, or worked out per request. */
export type PerRequest<Req, T> = T | ((req: Req) => T);

/** The options of `rateLimit` shared by tollgate/express and tollgate/koa; `Req` is the framework's request. */
export interface RateLimitOptions<Req> {
  /** The tollgate the requests are counted in. */
  tollgate: Tollgate;
  /**
   * The API key the request presents, or null when it has none (401). It is verified and the
   * request admitted in one Redis round trip (keys.verify). Give `key` or `subject`, not both.
   */
  key?: (req: Req) => string | null | undefined;
  /**
   * The subject the host has already identified (an account id, or `ip:<address>` with a
   * `policy`), or null when there is none (401). Counted with limits.admit.
   */
  subject?: (req: Req) => string | null | undefined;
  /** The surface counted. Default "api". */
  surface?: PerRequest<Req, string>;
  /** How many requests this one counts as. Default 1. */
  cost?: PerRequest<Req, number>;
  /** Credits the balance must hold, checked in the same round trip (402 when short). Default 0. */
  credits?: PerRequest<Req, number>;
  /** Count a subject without an account by this policy's windows (with `subject` only). */
  policy?: string;
  /** Requests for which this returns true pass untouched: not counted, no headers. */
  skip?: (req: Req) => boolean;
  /** Also send the IETF draft fields RateLimit-Policy and RateLimit (SPEC §4). Default false. */
  ietfHeaders?: boolean;
  /** The request id of an error reply (body and X-Request-Id). Default: a new random id. */
  requestId?: (req: Req) => string;
  /**
   * What a request gets when the quota store cannot be reached. "closed" (default): 503
   * unavailable. "open": it passes, uncounted. "local": this process counts it against the
   * windows last seen for its subject (a subject not seen yet: the smallest any plan or the
   * policy gives the surface), each limit divided by `instances`, until the store answers again.
   * Neither open nor local can verify a key: the pass carries the subject the key names,
   * unverified, and `degraded`. A request that pre-checks credits always fails closed. The
   * local counts belong to this options object: with checkRequest, make it once and reuse it.
   */
  onStoreError?: StoreErrorMode;
  /** With onStoreError "local": how many processes share the limits. Default 1. */
  instances?: number;
}

/** What a request that passed carries on (Express: `res.locals.tollgate`; Koa: `ctx.state.tollgate`). */
export interface RateLimitPass {
  /** The subject counted: the key's subject, or the one `subject` returned. */
  subject: string;
  /** The key's id, when the request was checked by key. */
  keyId?: string;
  /** The surface counted. */
  surface: string;
  /**
   * The admission: windows, and the credit pre-check's balance when one was asked. Absent only
   * on a pass let through uncounted by onStoreError "open".
   */
  admission?: Allowed;
  /** The rate-limit headers set on the response (none on a pass of onStoreError "open"). */
  headers: Record<string, string>;
  /**
   * Set when the quota store could not be reached and onStoreError decided: the subject (and
   * keyId) are then the ones the key names, NOT verified.
   */
  degraded?: "open" | "local";
}

/** Why a request was refused, with the reply that answers it. */
export interface RateLimitRefusal {
  /** 401 unauthorized, 429 rate_limited, 402 insufficient_quota or 503 unavailable. */
  reason: "unauthorized" | "rate_limited" | "insufficient_quota" | "unavailable";
  /** The error reply: status, headers (rate-limit headers except on 401) and body. */
  reply: HttpReply;
  /** The subject, when it was known. */
  subject?: string;
  /** The admission that refused the request or found the credits short. */
  admission?: Admission;
  /** The StoreUnavailableError behind a 503. */
  error?: unknown;
}

/** The outcome of one request: go on with these headers, or answer with the refusal. */
export type RateLimitDecision = { pass: RateLimitPass } | { refusal: RateLimitRefusal };

const UNAUTHORIZED = "A valid API key is required";

/** Checks the options once, when the middleware is made: a mistake shows at start-up. */
export function checkRateLimitOptions<Req>(options: RateLimitOptions<Req>): void {
  if (!options || typeof options.tollgate?.limits?.admit !== "function") throw new TypeError("rateLimit needs { tollgate }: the object createTollgate returned");
  if ((options.key === undefined) === (options.subject === undefined)) throw new TypeError("rateLimit needs exactly one of key (an API key to verify) or subject (a subject to admit)");
  if (options.key !== undefined && typeof options.key !== "function") throw new TypeError("rateLimit: key must be a function (req) => string | null");
  if (options.subject !== undefined && typeof options.subject !== "function") throw new TypeError("rateLimit: subject must be a function (req) => string | null");
  if (options.policy !== undefined && options.key !== undefined) throw new TypeError("rateLimit: policy counts subjects without an account; use it with subject, not key");
  const { plans, policies } = options.tollgate;
  const surface = typeof options.surface === "function" ? undefined : (options.surface ?? "api");
  if (options.policy !== undefined) {
    if (!Object.hasOwn(policies, options.policy)) throw new InvalidInputError(`rateLimit: policy ${JSON.stringify(options.policy)} is not one of createTollgate's policies (${Object.keys(policies).join(", ") || "none"})`);
    const has = Object.keys(policies[options.policy]!);
    if (surface !== undefined && !has.includes(surface)) throw new InvalidInputError(`rateLimit: surface ${JSON.stringify(surface)} is not a surface of policy "${options.policy}" (${has.join(", ")})`);
  } else if (surface !== undefined) {
    const has = new Set(Object.values(plans).flatMap((plan) => Object.keys(plan.limits)));
    if (!has.has(surface)) throw new InvalidInputError(`rateLimit: surface ${JSON.stringify(surface)} is not a surface of any plan (${[...has].join(", ")})`);
  }
  storeErrorMode(options);
}

function value<Req, T>(option: PerRequest<Req, T> | undefined, req: Req, fallback: T): T {
  if (option === undefined) return fallback;
  return typeof option === "function" ? (option as (req: Req) => T)(req) : option;
}

/**
 * Checks and counts one request, as the `rateLimit` middlewares do, for any framework: the
 * key verified with the admit (or the subject admitted), in one Redis round trip. Answers the
 * headers to send with the response, or the refusal to send instead; never throws for a
 * refusal, only for setup mistakes. Check the options once with checkRateLimitOptions.
 *
 * @example
 * ```ts
 * const options = { tollgate, key: (req: IncomingMessage) => String(req.headers["x-api-key"] ?? "") || null, credits: 1 };
 * checkRateLimitOptions(options);
 * const decision = await checkRequest(options, req);
 * if ("refusal" in decision) return send(decision.refusal.reply); // 401, 429, 402 or 503
 * for (const [name, value] of Object.entries(decision.pass.headers)) res.setHeader(name, value);
 * ```
 */
export async function checkRequest<Req>(options: RateLimitOptions<Req>, req: Req): Promise<RateLimitDecision> {
  const requestId = () => (options.requestId ? options.requestId(req) : newRequestId());
  const surface = value(options.surface, req, "api");
  const cost = value(options.cost, req, 1);
  const credits = value(options.credits, req, 0);
  const unauthorized = (subject?: string): RateLimitDecision => ({
    refusal: { reason: "unauthorized", reply: errorReply("unauthorized", UNAUTHORIZED, { requestId: requestId() }), ...(subject === undefined ? {} : { subject }) },
  });

  let subject: string;
  let keyId: string | undefined;
  let admission: Admission;
  let given: string | null | undefined;
  try {
    if (options.key) {
      given = options.key(req);
      if (typeof given !== "string" || given === "") return unauthorized();
      const verification = await options.tollgate.keys.verify(given, { surface, cost, credits });
      if (!verification.valid) return unauthorized();
      ({ subject, keyId, admission } = verification);
    } else {
      given = options.subject!(req);
      if (typeof given !== "string" || given === "") return unauthorized();
      subject = given;
      admission = await options.tollgate.limits.admit(subject, { surface, cost, credits, ...(options.policy === undefined ? {} : { policy: options.policy }) });
    }
  } catch (error) {
    if (isTollgateError(error, "unavailable")) return whenStoreFails(options, { given: given!, surface, cost, credits, requestId }, error);
    // A subject the host named that has no account proves nothing, like an unknown key.
    if (isTollgateError(error, "account_not_found")) return unauthorized();
    throw error;
  }

  if (options.onStoreError === "local") rememberWindows(options, subject, surface, admission.windows);
  const headerOptions = { ietf: options.ietfHeaders === true, policy: options.policy ?? surface };
  if (!admission.allowed) {
    return { refusal: { reason: "rate_limited", reply: rateLimitedReply(admission, requestId(), headerOptions), subject, admission } };
  }
  const headers = rateLimitHeaders(admission, headerOptions);
  if (admission.credits && !admission.credits.sufficient) {
    const reply = insufficientReply(admission.credits.balance, admission.credits.needed, requestId(), headers);
    return { refusal: { reason: "insufficient_quota", reply, subject, admission } };
  }
  return { pass: { subject, ...(keyId === undefined ? {} : { keyId }), surface, admission, headers } };
}
