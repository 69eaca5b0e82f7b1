/**
 * What every authenticated endpoint shares (docs/example-service.md), around tollgate's one-round-trip key
 * check + admit (credentials.ts): an IP over its failed checks gets 429 before anything is verified;
 * a credential that does not check out gets 401 (no rate-limit headers) and counts against its
 * IP (failedAuth.ts); a request over the budget gets 429 (not counted); then the endpoint, and
 * the rate-limit headers on whatever it answers, errors included.
 *
 * A request authenticated only by the session cookie that changes something is refused 403
 * forbidden, before anything is counted, when a browser says it came from another origin
 * (web/cookieRule.ts: the one rule of the cookie-authenticated site, for JSON routes and pages).
 *
 * Redis unreachable: 503 unavailable (fail closed), except on a route marked `failOpen` (the
 * free catalog reads, only when the host turns failOpenFreeEndpoints on): it is served,
 * uncounted and without rate-limit headers, to a caller whose credential this process verified
 * recently, or that needs no Redis to verify (an OAuth token the hook checks by itself).
 */
import { isTollgateError, type Usage } from 'tollgate';
import { checkCredential, credentialOf, tokenCaller, type Accept, type AuthDeps, type Caller, type Credential, type Price } from './credentials.ts';
import { replyForThrown } from '../http/errors.ts';
import type { FailedAuth } from './failedAuth.ts';
import { fail, withHeaders, type ApiRequest, type Handler, type HttpReply } from '../http/handler.ts';
import { MESSAGES } from '../http/messages.ts';
import { crossOriginRefusal } from '../web/cookieRule.ts';
import type { Site } from '../web/site.ts';

export interface Call {
  caller: Caller;
  /** The route's price: what the handler charges per unit of work. */
  price: Price;
  /** The rate-limit headers this reply carries; handlers add them to replies they build early. */
  headers: Record<string, string>;
  /** The pre-check's answer when the price has credits. */
  credits?: { sufficient: boolean; balance: number; needed: number; available: number };
  /** The usage read in the same round trip, when the price counts no request. */
  usage?: Usage;
}

export type AuthedHandler = (request: ApiRequest, call: Call) => Promise<HttpReply>;

export interface GuardOptions {
  price: Price;
  /** Credentials taken; default keys or the website's session cookie. */
  accept?: Accept;
  /**
   * Serve even when Redis is unreachable (free endpoints may fail open; docs/example-service.md#errors). Only for
   * endpoints that spend no credit and need no Redis themselves.
   */
  failOpen?: boolean;
}

export interface GuardDeps extends AuthDeps {
  failedAuth: FailedAuth;
  /** Where the site is: the origin the cookie rule compares a browser's Origin / Referer with. */
  site: Site;
}

/** A guarded route's handler carries its price, so the service can tell a charged route (no HEAD there). */
export type GuardedHandler = Handler & { readonly price: Price };

export function guard(deps: GuardDeps, handler: AuthedHandler, options: GuardOptions): GuardedHandler {
  const { price } = options;
  if (options.failOpen && price.credits > 0) throw new Error('A charged endpoint never fails open');
  const accept = options.accept ?? 'keys_or_session';
  const guarded: Handler = async (request) => {
    const blocked = deps.failedAuth.blocked(request);
    if (blocked) return blocked;
    const credential = credentialOf(request, accept, deps.tollgate);
    if (credential === null) return unauthorized(request);
    if (credential.via === 'session') {
      const refused = crossOriginRefusal(request, deps.site, price.credits);
      if (refused) return refused;
    }
    let call: Call;
    try {
      const admitted = await admit(deps, request, credential, price);
      if ('status' in admitted) return admitted;
      call = admitted;
    } catch (error) {
      const known = options.failOpen && isTollgateError(error, 'unavailable') ? await recall(deps, credential) : null;
      if (known === null) return replyForThrown(request, error);
      call = { caller: known, price, headers: {} };
    }
    try {
      return withHeaders(await handler(request, call), call.headers);
    } catch (error) {
      return replyForThrown(request, error, call.headers);
    }
  };
  return Object.assign(guarded, { price });
}

/** True when the handler is a guarded route's that charges credits for its work. */
export function isCharged(handler: Handler): boolean {
  return ((handler as Partial<GuardedHandler>).price?.credits ?? 0) > 0;
}

/** The credential checked and the request counted (or only read): the call to run, or the 401 / 429 to send. */
async function admit(deps: GuardDeps, request: ApiRequest, credential: Credential, price: Price): Promise<Call | HttpReply> {
  const checked = await checkCredential(deps, credential, price, request);
  if (!checked.valid) return deps.failedAuth.refuse(request, unauthorized(request));
  const { caller } = checked;
  deps.recentCallers?.remember(credential, caller);
  if (checked.reply) return checked.reply;
  return { caller, price, headers: checked.headers, credits: checked.credits, usage: checked.usage };
}

/** Who a credential proved to be without Redis: recently verified here, or an OAuth token the hook checks alone. */
async function recall(deps: GuardDeps, credential: Credential): Promise<Caller | null> {
  const recent = deps.recentCallers?.recall(credential) ?? null;
  if (recent !== null || credential.via !== 'oauth') return recent;
  return tokenCaller(deps, credential.value).catch(() => null);
}

export function unauthorized(request: ApiRequest): HttpReply {
  return fail(request, 'unauthorized', MESSAGES.unauthorized);
}
