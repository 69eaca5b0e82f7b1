/**
 * The steps every authenticated endpoint shares (SPEC §4, §8): authenticate (401 without
 * rate-limit headers) -> admit on the caller's surface, with the credit pre-check of a charged
 * endpoint in the same round trip (429 not counted) -> the endpoint -> rate-limit headers on
 * whatever it answers, errors included.
 */
import { isTollgateError, rateLimitedReply, rateLimitHeaders, type Tollgate } from '../../src/index.ts';
import { authenticate, type Accept, type AuthDeps, type Caller } from './auth.ts';
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
}

export interface GuardDeps extends AuthDeps {
  tollgate: Tollgate;
  ietfHeaders: boolean;
}

export function guard(deps: GuardDeps, handler: AuthedHandler, options: GuardOptions = {}): Handler {
  return async (request) => {
    let headers: Record<string, string> = {};
    try {
      const caller = await authenticate(request, deps, options.accept ?? 'keys_or_session');
      if (caller === null) return unauthorized(request);
      const surface = caller.surface;
      const headerOptions = { ietf: deps.ietfHeaders, policy: surface };
      let credits: Call['credits'];
      if (options.count === false) {
        const usage = await deps.tollgate.usage(caller.accountId, surface);
        headers = rateLimitHeaders(usage.rateLimit, headerOptions);
      } else {
        const admission = await deps.tollgate.limits.admit(caller.accountId, { surface, credits: options.credits ?? 0 });
        if (!admission.allowed) {
          return rateLimitedReply(admission.rateLimit, admission.retryAfterMs, request.requestId, headerOptions);
        }
        headers = rateLimitHeaders(admission.rateLimit, headerOptions);
        credits = admission.credits;
      }
      return withHeaders(await handler(request, { caller, headers, credits }), headers);
    } catch (error) {
      // A key whose account is gone proves nothing.
      if (isTollgateError(error, 'account_not_found') && Object.keys(headers).length === 0) return unauthorized(request);
      return replyForThrown(request, error, headers);
    }
  };
}

export function unauthorized(request: ApiRequest): HttpReply {
  return fail(request, 'unauthorized', 'A valid API key is required (Authorization: Bearer <key> or X-API-Key)');
}
