/**
 * The steps every authenticated endpoint shares (SPEC §4, §8): authenticate (401 without
 * rate-limit headers) -> admit on the caller's surface, with the credit pre-check of a charged
 * endpoint in the same round trip (429 not counted) -> the endpoint -> rate-limit headers on
 * whatever it answers, errors included.
 *
 * Redis unreachable: 503 unavailable (fail closed), except on a route marked `failOpen` (the
 * free catalog reads, only when the host turns failOpenFreeEndpoints on): it is served,
 * uncounted and without rate-limit headers, to a caller whose credential this process verified
 * recently, or that needs no Redis to verify (an OAuth token the hook checks by itself).
 */
import { isTollgateError, rateLimitedReply, rateLimitHeaders, type Tollgate } from '../../src/index.ts';
import { authenticate, recallCaller, type Accept, type AuthDeps, type Caller } from './auth.ts';
import { replyForThrown } from './errors.ts';
import { fail, withHeaders, type ApiRequest, type Handler, type HttpReply } from './http.ts';

export interface Call {
  caller: Caller;
  /** The rate-limit headers this reply carries; handlers add them to replies they build early. */
  headers: Record<string, string>;
  /** The pre-check's answer when the route asked for one. */
  credits?: { sufficient: boolean; balance: number; needed: number };
}

export type AuthedHandler = (request: ApiRequest, call: Call) => Promise<HttpReply>;

export interface GuardOptions {
  /** Count the request against the per-minute budget; false only for GET /api/v1/usage. */
  count?: boolean;
  /** Credits the balance must hold before the endpoint does any work (SPEC §5). */
  credits?: number;
  /** Credentials taken; default keys or the website's session cookie. */
  accept?: Accept;
  /**
   * Serve even when Redis is unreachable (SPEC §8: free endpoints may fail open). Only for
   * endpoints that spend no credit and need no Redis themselves.
   */
  failOpen?: boolean;
}

export interface GuardDeps extends AuthDeps {
  tollgate: Tollgate;
  ietfHeaders: boolean;
}

export function guard(deps: GuardDeps, handler: AuthedHandler, options: GuardOptions = {}): Handler {
  if (options.failOpen && options.credits) throw new Error('A charged endpoint never fails open (SPEC §8)');
  const accept = options.accept ?? 'keys_or_session';
  return async (request) => {
    let caller: Caller | null = null;
    let call: Call;
    try {
      caller = await authenticate(request, deps, accept);
      if (caller === null) return unauthorized(request);
      const admitted = await admit(deps, request, caller, options);
      if ('status' in admitted) return admitted;
      call = admitted;
    } catch (error) {
      // A key whose account is gone proves nothing.
      if (isTollgateError(error, 'account_not_found')) return unauthorized(request);
      const known = options.failOpen && isTollgateError(error, 'unavailable') ? (caller ?? recallCaller(request, deps, accept)) : null;
      if (known === null) return replyForThrown(request, error);
      call = { caller: known, headers: {} };
    }
    try {
      return withHeaders(await handler(request, call), call.headers);
    } catch (error) {
      return replyForThrown(request, error, call.headers);
    }
  };
}

/** The request counted (or only read, for usage): the call to run, or the 429 to send. */
async function admit(deps: GuardDeps, request: ApiRequest, caller: Caller, options: GuardOptions): Promise<Call | HttpReply> {
  const surface = caller.surface;
  const headerOptions = { ietf: deps.ietfHeaders, policy: surface };
  if (options.count === false) {
    const usage = await deps.tollgate.usage(caller.accountId, surface);
    return { caller, headers: rateLimitHeaders(usage.rateLimit, headerOptions) };
  }
  const admission = await deps.tollgate.limits.admit(caller.accountId, { surface, credits: options.credits ?? 0 });
  if (!admission.allowed) return rateLimitedReply(admission.rateLimit, admission.retryAfterMs, request.requestId, headerOptions);
  return { caller, headers: rateLimitHeaders(admission.rateLimit, headerOptions), credits: admission.credits };
}

export function unauthorized(request: ApiRequest): HttpReply {
  return fail(request, 'unauthorized', 'A valid API key is required (Authorization: Bearer <key> or X-API-Key)');
}
