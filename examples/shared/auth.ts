/**
 * Who is calling, on which surface, and whether the request is admitted (SPEC §2, §4, §9).
 * `X-API-Key: <key>` or `Authorization: Bearer <key or OAuth token>` use the `api` surface; the
 * website's session cookie uses `web`. API keys and sessions are both tollgate keys: an API key
 * may only be used on `api`, a session is a key that expires and may only be used on `web`, so
 * a cookie value is never an API key and an API key is never a session. tollgate checks a key
 * and admits its request (with the credit pre-check) in one script: one Redis round trip. An
 * OAuth token resolves through the host's verifier hook to its account, then a plain admit.
 */
import { createHash } from 'node:crypto';
import { checkRequest, isTollgateError, type Admission, type RateLimitDecision, type Tollgate, type Usage } from '../../src/index.ts';
import { cookie, type ApiRequest } from './http.ts';
import type { TokenVerifier } from './oauth.ts';

export const SESSION_COOKIE = 'tg_session';

export type Surface = 'api' | 'web';

export interface Caller {
  accountId: string;
  surface: Surface;
  via: 'api_key' | 'oauth' | 'session';
}

/**
 * What a route or tool costs, written once beside it (routes.ts, mcpTools.ts): the requests it
 * counts on the caller's surface (0 only for usage reads), and the credits one unit of its
 * work is charged, which the balance must hold before any work starts (SPEC §5). `optional`
 * credits are charged only as far as the balance allows (MCP get_transcript's comments page).
 */
export interface Price {
  requests: 0 | 1;
  credits: number;
  optional?: number;
}

export interface AuthDeps {
  tollgate: Tollgate;
  verifyToken?: TokenVerifier;
  /** Set only when free endpoints fail open: remembers recent callers for an outage. */
  recentCallers?: RecentCallers;
}

/** Which credentials an endpoint takes: the REST API takes both, MCP keys only, the website sessions only. */
export type Accept = 'keys' | 'keys_or_session' | 'session';

/** The credential a request presents, before anything checks it. */
export type Credential = { via: Caller['via']; value: string };

export function credentialOf(request: ApiRequest, accept: Accept, tollgate: Tollgate): Credential | null {
  const session = (): Credential | null => {
    const value = cookie(request, SESSION_COOKIE);
    return value === undefined ? null : { via: 'session', value };
  };
  if (accept === 'session') return session();
  const apiKey = request.headers['x-api-key'];
  if (apiKey !== undefined) return { via: 'api_key', value: apiKey };
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
  if (bearer !== undefined) return { via: tollgate.keys.parse(bearer) === null ? 'oauth' : 'api_key', value: bearer };
  if (request.headers.authorization !== undefined) return null;
  return accept === 'keys_or_session' ? session() : null;
}

export type Checked =
  | { valid: false }
  /** Counted: the admission (allowed, or the 429 to send) with the credit pre-check's answer. */
  | { valid: true; caller: Caller; admission: Admission }
  /** Not counted (price.requests 0): the account's usage, read in the same round trip. */
  | { valid: true; caller: Caller; usage: Usage };

/**
 * Checks a credential and admits its request at `price` on the credential's surface, or reads
 * the usage when the price counts no request. A counted request goes through the library's
 * checkRequest, the step its rateLimit middlewares take: a key or session is verified with
 * the admit in one script (keys.verify); an OAuth token is resolved by the verifier hook, then
 * its account admitted.
 */
export async function checkCredential(deps: AuthDeps, credential: Credential, price: Price): Promise<Checked> {
  const surface: Surface = credential.via === 'session' ? 'web' : 'api';
  const { tollgate } = deps;
  if (credential.via === 'oauth') {
    const caller = await tokenCaller(deps, credential.value);
    if (caller === null) return { valid: false };
    if (price.requests === 0) {
      try {
        return { valid: true, caller, usage: await tollgate.usage(caller.accountId, { surface }) };
      } catch (error) {
        // A token whose account is gone proves nothing.
        if (isTollgateError(error, 'account_not_found')) return { valid: false };
        throw error;
      }
    }
    const decision = await checkRequest({ ...BY_SUBJECT, tollgate }, { credential: caller.accountId, surface, credits: price.credits });
    return checkedOf(decision, () => caller);
  }
  const caller = (accountId: string): Caller => ({ accountId, surface, via: credential.via });
  if (price.requests === 0) {
    const verified = await tollgate.keys.verify(credential.value, { surface, usage: true });
    return verified.valid ? { valid: true, caller: caller(verified.subject), usage: verified.usage } : { valid: false };
  }
  const decision = await checkRequest({ ...BY_KEY, tollgate }, { credential: credential.value, surface, credits: price.credits });
  return checkedOf(decision, caller);
}

/** A counted request as checkRequest sees it here: the credential already picked out of the HTTP request. */
interface Counted {
  /** The key or session, or the account an OAuth token named. */
  credential: string;
  surface: Surface;
  credits: number;
}

const COUNTED = { surface: (request: Counted) => request.surface, credits: (request: Counted) => request.credits };
const BY_KEY = { ...COUNTED, key: (request: Counted) => request.credential };
const BY_SUBJECT = { ...COUNTED, subject: (request: Counted) => request.credential };

/**
 * checkRequest's decision as the guard takes it: the admission (allowed, or refused at 429 or
 * 402, which the guard answers in its own words), an invalid credential, or the store's
 * outage thrown for the guard's fail-open or 503 rule.
 */
function checkedOf(decision: RateLimitDecision, caller: (accountId: string) => Caller): Checked {
  if ('pass' in decision) return { valid: true, caller: caller(decision.pass.subject), admission: decision.pass.admission };
  const { refusal } = decision;
  if (refusal.reason === 'unavailable') throw refusal.error;
  if (refusal.reason === 'unauthorized') return { valid: false };
  return { valid: true, caller: caller(refusal.subject!), admission: refusal.admission! };
}

/** The caller an OAuth token names, asked of the verifier hook alone; null when it names none. */
export async function tokenCaller(deps: AuthDeps, token: string): Promise<Caller | null> {
  const accountId = deps.verifyToken ? await deps.verifyToken(token) : null;
  return accountId === null ? null : { accountId, surface: 'api', via: 'oauth' };
}

/**
 * Credentials verified against Redis recently, held in this process by their SHA-256 (never
 * the credential itself) for `ttlMs`, at most `capacity` of them (oldest dropped first), for a
 * free endpoint that fails open while Redis cannot be asked. A credential revoked in Redis can
 * so still read free endpoints here for up to `ttlMs`, and only while Redis is unreachable.
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

  /** The caller the credential proved within ttlMs; null when it proved nothing recently. */
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
