/**
 * Who is calling, and on which surface (SPEC §2, §9): `X-API-Key: <key>` or
 * `Authorization: Bearer <key or OAuth token>` use the `api` surface; the website's session
 * cookie uses `web`. A request that proves nothing gets 401, with no rate-limit headers.
 */
import type { Surface } from '../../src/index.ts';
import type { ApiKeys } from './apiKeys.ts';
import { cookie, type ApiRequest } from './http.ts';
import type { TokenVerifier } from './oauth.ts';
import { SESSION_COOKIE, type Sessions } from './sessions.ts';

export interface Caller {
  accountId: string;
  surface: Surface;
  via: 'api_key' | 'oauth' | 'session';
}

export interface AuthDeps {
  apiKeys: ApiKeys;
  sessions: Sessions;
  verifyToken?: TokenVerifier;
}

/** Which credentials an endpoint takes: the REST API takes both, MCP keys only, the website sessions only. */
export type Accept = 'keys' | 'keys_or_session' | 'session';

export async function authenticate(request: ApiRequest, deps: AuthDeps, accept: Accept): Promise<Caller | null> {
  if (accept === 'session') return viaSession(request, deps);
  const apiKey = request.headers['x-api-key'];
  if (apiKey !== undefined) return viaKey(await deps.apiKeys.verify(apiKey));

  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
  if (bearer !== undefined) {
    if (bearer.startsWith('tgk_')) return viaKey(await deps.apiKeys.verify(bearer));
    const accountId = deps.verifyToken ? await deps.verifyToken(bearer) : null;
    return accountId === null ? null : { accountId, surface: 'api', via: 'oauth' };
  }
  if (request.headers.authorization !== undefined) return null;

  return accept === 'keys_or_session' ? viaSession(request, deps) : null;
}

async function viaSession(request: ApiRequest, deps: AuthDeps): Promise<Caller | null> {
  const sessionId = cookie(request, SESSION_COOKIE);
  if (sessionId === undefined) return null;
  const accountId = await deps.sessions.resolve(sessionId);
  return accountId === null ? null : { accountId, surface: 'web', via: 'session' };
}

function viaKey(accountId: string | null): Caller | null {
  return accountId === null ? null : { accountId, surface: 'api', via: 'api_key' };
}
