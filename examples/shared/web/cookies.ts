/**
 * The site's two cookies, both HttpOnly and SameSite=Lax, and Secure when the site is served
 * over HTTPS: `tg_session` holds the session (a tollgate key allowed only on `web`), and
 * `tg_signin` a random value the sign-in form's CSRF token is bound to before there is a
 * session (csrf.ts).
 */
import { randomBytes } from 'node:crypto';
import { stringifySetCookie } from 'cookie';
import { SESSION_COOKIE } from '../auth/credentials.ts';
import { cookie, type ApiRequest } from '../http/handler.ts';
import type { Site } from './site.ts';

export const SIGNIN_COOKIE = 'tg_signin';

/** Our cookie values are base64url and key characters: written as they are, nothing to encode. */
const asIs = (value: string) => value;

function setCookie(request: ApiRequest, site: Site, name: string, value: string, maxAgeS: number | undefined): string {
  return stringifySetCookie(
    { name, value, path: '/', httpOnly: true, sameSite: 'lax', secure: site.secure(request), ...(maxAgeS === undefined ? {} : { maxAge: maxAgeS }) },
    { encode: asIs },
  );
}

export function sessionCookie(request: ApiRequest, site: Site, key: string, maxAgeS: number): string {
  return setCookie(request, site, SESSION_COOKIE, key, maxAgeS);
}

export function clearedSessionCookie(request: ApiRequest, site: Site): string {
  return setCookie(request, site, SESSION_COOKIE, '', 0);
}

/** The sign-in form's binding: the one the browser holds, or a new one to set (until the browser closes). */
export function signinBinding(request: ApiRequest, site: Site): { value: string; setCookie?: string } {
  const held = cookie(request, SIGNIN_COOKIE);
  if (held !== undefined && /^[A-Za-z0-9_-]{22,64}$/.test(held)) return { value: held };
  const value = randomBytes(18).toString('base64url');
  return { value, setCookie: setCookie(request, site, SIGNIN_COOKIE, value, undefined) };
}
