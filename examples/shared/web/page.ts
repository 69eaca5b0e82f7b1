/**
 * What every signed-in page shares, around the guard (auth/guard.ts) the JSON routes use: the
 * session cookie on the `web` surface, the cookie rule (cookieRule.ts; the guard applies it,
 * and a form is checked before anything is counted), a form's CSRF token, the page counted
 * against the `web` budget, and every error told as sentences
 * (errorPage.ts) with its status and headers kept. A GET without a valid session goes to the
 * sign-in page.
 */
import { SESSION_COOKIE, type Price } from '../auth/credentials.ts';
import type { FailedAuth } from '../auth/failedAuth.ts';
import { guard, type AuthedHandler, type GuardDeps } from '../auth/guard.ts';
import { cookie, fail, type ApiRequest, type Handler, type HttpReply } from '../http/handler.ts';
import { MESSAGES } from '../http/messages.ts';
import type { Tollgate, Usage } from 'tollgate';
import { crossOriginRefusal } from './cookieRule.ts';
import { clearedSessionCookie } from './cookies.ts';
import { CSRF_FIELD, csrfValid } from './csrf.ts';
import { errorOf, errorPage, isJsonError } from './errorPage.ts';
import { formFields } from './forms.ts';
import { redirect } from './render.ts';
import type { Site } from './site.ts';

export interface PageGuardDeps extends GuardDeps {
  tollgate: Tollgate;
  failedAuth: FailedAuth;
  site: Site;
}

export interface PageOptions {
  price: Price;
  /** A form submit (POST): it must carry the session's CSRF token. */
  form?: boolean;
}

export function page(deps: PageGuardDeps, handler: AuthedHandler, options: PageOptions): Handler {
  const inner: AuthedHandler = async (request, call) => {
    const reply = await handler(request, call);
    if (!isJsonError(reply)) return reply;
    const usage = errorOf(reply).type === 'insufficient_quota' ? await usageOrNull(deps.tollgate, call.caller.accountId) : null;
    return errorPage(reply, { signedIn: true, usage, back: backTo(request) });
  };
  const guarded = guard(deps, inner, { price: options.price, accept: 'session' });
  return async (request) => {
    const blocked = deps.failedAuth.blocked(request);
    if (blocked) return errorPage(blocked, { signedIn: false, failedSignIns: true });
    // A form sent with a session: from this site (the guard checks it again) and with its
    // token, before anything is counted. Without a session the guard's 401 says to sign in.
    if (options.form && cookie(request, SESSION_COOKIE) !== undefined) {
      const refused =
        crossOriginRefusal(request, deps.site, options.price.credits) ??
        (csrfValid(request, 'session', formFields(request)[CSRF_FIELD]) ? undefined : fail(request, 'forbidden', MESSAGES.staleForm));
      if (refused) return errorPage(refused, { signedIn: true, back: backTo(request) });
    }
    const reply = await guarded(request);
    if (!isJsonError(reply)) return reply;
    if (reply.status === 401) return signInAgain(deps, request, reply);
    return errorPage(reply, { signedIn: cookie(request, SESSION_COOKIE) !== undefined, back: backTo(request) });
  };
}

/** No valid session: a GET goes to the sign-in page (a stale cookie is dropped), a form submit says so. */
function signInAgain(deps: PageGuardDeps, request: ApiRequest, reply: HttpReply): HttpReply {
  const stale: Record<string, string> = cookie(request, SESSION_COOKIE) !== undefined ? { 'Set-Cookie': clearedSessionCookie(request, deps.site) } : {};
  if (request.method === 'GET') return redirect('/', stale);
  const page = errorPage(reply, { signedIn: false });
  return { ...page, headers: { ...page.headers, ...stale } };
}

/** A failed form goes back to the page it was sent from. */
function backTo(request: ApiRequest): { href: string; text: string } | undefined {
  if (request.method !== 'POST') return undefined;
  const section = /^\/(transcripts|collections|bulk)\b/.exec(request.path)?.[1];
  if (section === undefined) return undefined;
  const names: Record<string, string> = { transcripts: 'transcripts', collections: 'collections', bulk: 'bulk jobs' };
  return { href: `/${section}`, text: `Back to ${names[section]}` };
}

async function usageOrNull(tollgate: Tollgate, accountId: string): Promise<Usage | null> {
  return tollgate.usage(accountId, { surface: 'web' }).catch(() => null);
}
