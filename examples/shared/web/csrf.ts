/**
 * CSRF tokens for the site's forms, checked on submit beside the Origin rule (cookieRule.ts).
 * A token is an HMAC keyed by a secret the browser holds in an HttpOnly cookie, over what the
 * form is for: the session itself once signed in, the `tg_signin` cookie on the sign-in form.
 * Another site can make the browser send those cookies but can neither read them nor the page,
 * so it cannot write the token into its own form. No server-side state: any process of the
 * service checks a token another one wrote.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { SESSION_COOKIE } from '../auth/credentials.ts';
import { cookie, type ApiRequest } from '../http/handler.ts';
import { SIGNIN_COOKIE } from './cookies.ts';

export type CsrfPurpose = 'signin' | 'session';

/** The form field that carries the token. */
export const CSRF_FIELD = 'csrf_token';

export function csrfToken(purpose: CsrfPurpose, secret: string): string {
  return createHmac('sha256', secret).update(`tollgate-csrf:${purpose}`).digest('base64url');
}

/** The token a form for `purpose` must carry in this request, or null when the browser holds no cookie to bind it to. */
export function expectedToken(request: ApiRequest, purpose: CsrfPurpose): string | null {
  const secret = cookie(request, purpose === 'session' ? SESSION_COOKIE : SIGNIN_COOKIE);
  return secret === undefined || secret === '' ? null : csrfToken(purpose, secret);
}

/** True when the submitted form carries the token its cookie calls for. */
export function csrfValid(request: ApiRequest, purpose: CsrfPurpose, submitted: string | undefined): boolean {
  const expected = expectedToken(request, purpose);
  if (expected === null || submitted === undefined) return false;
  const a = Buffer.from(submitted);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
