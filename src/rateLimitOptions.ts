// What checkRequest and the rate-limit middlewares take and answer: their options, the pass
// of a request that goes on, and the refusal of one that does not.
import type { HttpReply } from './replies.ts';
import type { Admission, Allowed } from './rules/limits.ts';
import type { Tollgate } from './tollgate.ts';

/** What a rate-limit middleware does when the quota store cannot be reached. */
export type StoreErrorMode = 'closed' | 'open' | 'local';

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
  /** Also send the IETF draft fields RateLimit-Policy and RateLimit. Default false. */
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
  degraded?: 'open' | 'local';
  /**
   * On a surface with a concurrency limit: frees the place the request took (limits.release).
   * The middlewares call it when the response finishes or the connection closes; a host
   * using checkRequest calls it when the work is done. Safe to call more than once; a store
   * error is swallowed (the place then frees itself after its leaseMs).
   */
  release?: () => Promise<void>;
}

/** The error types checkRequest answers with. */
export type RefusalType = 'unauthorized' | 'rate_limited' | 'insufficient_quota' | 'unavailable';

/** Why a request was refused, with the reply that answers it. */
export interface RateLimitRefusal {
  /** The reply's error type: 401 unauthorized, 429 rate_limited, 402 insufficient_quota or 503 unavailable. */
  type: RefusalType;
  /**
   * The reply's error type, under its former name.
   * @deprecated Read `type` (the error body's `error.type`); `reason` stays until 1.0.
   */
  reason: RefusalType;
  /** The error reply: status, headers (rate-limit headers except on 401) and body. */
  reply: HttpReply;
  /** The subject, when it was known. */
  subject?: string;
  /** The admission that refused the request or found the credits short. */
  admission?: Admission;
  /** The StoreUnavailableError behind a 503. */
  error?: unknown;
}

/** The outcome of one request: go on with these headers (`ok: true`), or answer with the refusal. */
export type RateLimitDecision = { ok: true; pass: RateLimitPass } | { ok: false; refusal: RateLimitRefusal };

/** A refused request: its error type (under both names until 1.0), the reply, and what is known. */
export function refused(type: RefusalType, reply: HttpReply, known: Pick<RateLimitRefusal, 'subject' | 'admission' | 'error'> = {}): RateLimitDecision {
  return { ok: false, refusal: { type, reason: type, reply, ...known } };
}
