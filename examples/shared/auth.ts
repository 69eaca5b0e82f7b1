/**
 * Who is calling, and on which surface (SPEC §2, §9): `X-API-Key: <key>` or
 * `Authorization: Bearer <key or OAuth token>` use the `api` surface; the website's session
 * cookie uses `web`. A request that proves nothing gets 401, with no rate-limit headers.
 */
import { createHash } from 'node:crypto';
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
  /** Set only when free endpoints fail open: remembers recent callers for an outage. */
  recentCallers?: RecentCallers;
}

/** Which credentials an endpoint takes: the REST API takes both, MCP keys only, the website sessions only. */
export type Accept = 'keys' | 'keys_or_session' | 'session';

/** The credential a request presents, before anything checks it. */
type Credential = { via: Caller['via']; value: string };

function credentialOf(request: ApiRequest, accept: Accept): Credential | null {
  const session = (): Credential | null => {
    const id = cookie(request, SESSION_COOKIE);
    return id === undefined ? null : { via: 'session', value: id };
  };
  if (accept === 'session') return session();
  const apiKey = request.headers['x-api-key'];
  if (apiKey !== undefined) return { via: 'api_key', value: apiKey };
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
  if (bearer !== undefined) return { via: bearer.startsWith('tgk_') ? 'api_key' : 'oauth', value: bearer };
  if (request.headers.authorization !== undefined) return null;
  return accept === 'keys_or_session' ? session() : null;
}

export async function authenticate(request: ApiRequest, deps: AuthDeps, accept: Accept): Promise<Caller | null> {
  const credential = credentialOf(request, accept);
  if (credential === null) return null;
  const caller = await verify(credential, deps);
  if (caller !== null) deps.recentCallers?.remember(credential, caller);
  return caller;
}

async function verify({ via, value }: Credential, deps: AuthDeps): Promise<Caller | null> {
  let accountId: string | null;
  if (via === 'api_key') accountId = await deps.apiKeys.verify(value);
  else if (via === 'oauth') accountId = deps.verifyToken ? await deps.verifyToken(value) : null;
  else accountId = await deps.sessions.resolve(value);
  return accountId === null ? null : { accountId, surface: via === 'session' ? 'web' : 'api', via };
}

/**
 * The caller a request's credential proved within the last few minutes, for a free endpoint
 * that fails open while Redis (where keys and sessions live) cannot be asked; null when it
 * proved nothing recently. Never used for anything charged.
 */
export function recallCaller(request: ApiRequest, deps: AuthDeps, accept: Accept): Caller | null {
  const credential = credentialOf(request, accept);
  return credential === null ? null : (deps.recentCallers?.recall(credential) ?? null);
}

/**
 * Credentials verified against Redis recently, held in this process by their SHA-256 (never
 * the credential itself) for `ttlMs`, at most `capacity` of them (oldest dropped first). A
 * credential revoked in Redis can so still read free endpoints here for up to `ttlMs`, and only
 * while Redis is unreachable.
 */
export class RecentCallers {
  private readonly entries = new Map<string, { caller: Caller; until: number }>();

  constructor(
    private readonly ttlMs = 5 * 60_000,
    private readonly capacity = 10_000,
  ) {}

  remember(credential: Credential, caller: Caller): void {
    const id = digest(credential);
    this.entries.delete(id);
    this.entries.set(id, { caller, until: Date.now() + this.ttlMs });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  recall(credential: Credential): Caller | null {
    const id = digest(credential);
    const entry = this.entries.get(id);
    if (entry === undefined) return null;
    if (entry.until > Date.now()) return entry.caller;
    this.entries.delete(id);
    return null;
  }
}

function digest({ via, value }: Credential): string {
  return createHash('sha256').update(`${via}\0${value}`).digest('base64url');
}
