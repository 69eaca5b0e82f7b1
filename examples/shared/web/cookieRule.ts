/**
 * The one rule of a site authenticated by a cookie, for the JSON routes and the pages alike: a
 * request that changes something and is authenticated only by the session cookie is refused
 * with 403 forbidden when its `Origin` (or, when absent, its `Referer`) names another origin.
 * A browser attaches the cookie to requests other sites make it send (a form posted from
 * another page, a `fetch` with credentials, a top-level navigation); SameSite=Lax stops the
 * cross-site ones but not those of another port or subdomain of the same site, which are other
 * origins all the same. When a browser sends neither header it still says where a request
 * came from in `Sec-Fetch-Site`; a client that is no browser sends none of the three, and has
 * no cookie it did not put there itself.
 *
 * What changes something: every method but GET, HEAD and OPTIONS, and a GET that spends
 * credits (a transcript, a comments page), so that a link on another site cannot spend them.
 * Pages' forms also carry a CSRF token (csrf.ts); body-less requests (DELETE, logout) need
 * nothing more than this rule.
 */
import { fail, type ApiRequest, type HttpReply } from '../http/handler.ts';
import { MESSAGES } from '../http/messages.ts';
import type { Site } from './site.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether the rule applies: the method changes something, or the request spends credits. */
export function changesState(request: ApiRequest, credits = 0): boolean {
  return credits > 0 || !SAFE_METHODS.has(request.method.toUpperCase());
}

/** The other origin a browser says the request came from; null when it came from this site, or from no browser. */
export function foreignOrigin(request: ApiRequest, site: Site): string | null {
  const own = site.origin(request);
  const origin = request.headers.origin;
  if (origin !== undefined) return sameOrigin(origin, own) ? null : origin;
  const referer = request.headers.referer;
  if (referer !== undefined) return sameOrigin(referer, own) ? null : referer;
  const fetchSite = request.headers['sec-fetch-site'];
  if (fetchSite !== undefined && fetchSite !== 'same-origin' && fetchSite !== 'none') return `a ${fetchSite} page`;
  return null;
}

/** The 403 forbidden for a cookie-authenticated request from another origin, else undefined. */
export function crossOriginRefusal(request: ApiRequest, site: Site, credits = 0): HttpReply | undefined {
  if (!changesState(request, credits)) return undefined;
  const foreign = foreignOrigin(request, site);
  return foreign === null ? undefined : fail(request, 'forbidden', MESSAGES.crossOrigin(foreign));
}

/** `Origin: null` (a sandboxed frame, a file) and anything unreadable are another origin. */
function sameOrigin(url: string, own: string): boolean {
  try {
    return new URL(url).origin === new URL(own).origin;
  } catch {
    return false;
  }
}
