/**
 * Where the site is, as a browser sees it: its origin (scheme, host and port), which the cookie
 * rule compares `Origin` and `Referer` with and the OAuth metadata names, and whether it is
 * served over HTTPS (cookies are then `Secure`).
 *
 * By default both come from the request itself: the connection's TLS and the `Host` header.
 * Behind a proxy that ends TLS, set `publicUrl` (PUBLIC_URL), or `trustProxy` (TRUST_PROXY=1)
 * to believe `X-Forwarded-Proto` / `X-Forwarded-Host`; never trust them otherwise, since any
 * client can send them.
 */
import type { ApiRequest } from '../http/handler.ts';

export interface SiteOptions {
  /** The site's public origin, e.g. `https://transcripts.example`; wins over everything else. */
  publicUrl?: string;
  /** Believe X-Forwarded-Proto and X-Forwarded-Host (only behind a proxy that sets them). */
  trustProxy?: boolean;
}

export interface Site {
  /** `scheme://host[:port]` of the site for this request. */
  origin(request: ApiRequest): string;
  /** Served over HTTPS: cookies get `Secure`. */
  secure(request: ApiRequest): boolean;
}

/** A host as a Host header may carry it: a name or address and an optional port, nothing else. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

export function createSite(options: SiteOptions = {}): Site {
  const fixed = options.publicUrl === undefined ? undefined : publicOrigin(options.publicUrl);
  const forwarded = (request: ApiRequest, name: string) => (options.trustProxy ? request.headers[name]?.split(',')[0]?.trim() : undefined);
  const secure = (request: ApiRequest): boolean => {
    if (fixed !== undefined) return fixed.startsWith('https:');
    const proto = forwarded(request, 'x-forwarded-proto');
    return proto !== undefined ? proto.toLowerCase() === 'https' : request.secure === true;
  };
  return {
    secure,
    origin(request) {
      if (fixed !== undefined) return fixed;
      const host = forwarded(request, 'x-forwarded-host') ?? request.headers.host ?? '';
      // A Host no browser would send names no origin: nothing cross-origin can match it.
      const safeHost = HOST.test(host) ? host.toLowerCase() : 'invalid.host';
      return `${secure(request) ? 'https' : 'http'}://${safeHost}`;
    },
  };
}

function publicOrigin(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`PUBLIC_URL must be an absolute http(s) URL, got ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`PUBLIC_URL must be http or https, got ${JSON.stringify(url)}`);
  return parsed.origin;
}
