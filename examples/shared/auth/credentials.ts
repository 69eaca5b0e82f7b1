/**
 * Who is calling, on which surface, and whether the request is admitted (docs/example-service.md).
 * `X-API-Key: <key>` or `Authorization: Bearer <key or OAuth token>` use the `api` surface; the
 * website's session cookie uses `web`. API keys and sessions are both tollgate keys: an API key
 * may only be used on `api`, a session is a key that expires and may only be used on `web`, so
 * a cookie value is never an API key and an API key is never a session. tollgate checks a key
 * and admits its request (with the credit pre-check) in one script: one Redis round trip. An
 * OAuth token resolves through the host's verifier hook to its account, then a plain admit.
 */
import { createHash } from 'node:crypto';
import { isTollgateError, type Allowed, type Tollgate, type Usage } from 'tollgate';
import { checkRequest, rateLimitHeaders, type RateLimitDecision } from 'tollgate/http';
import { cookie, type ApiRequest, type HttpReply } from '../http/handler.ts';
import type { TokenVerifier } from './oauth.ts';

export const SESSION_COOKIE = 'tg_session';

export type Surface = 'api' | 'web';

export interface Caller {
  accountId: string;
  surface: Surface;
  via: 'api_key' | 'oauth' | 'session';
}

/**
 * What a route or tool costs, written once beside it (routes.ts, mcp/tools.ts): the requests it
 * counts on the caller's surface (0 only for usage reads), and the credits one unit of its
 * work is charged, which the balance must hold before any work starts (docs/example-service.md#transcripts-and-comments). `optional`
 * credits are charged only as far as the balance allows (MCP get_transcript's comments page).
 */
export interface Price {
  requests: 0 | 1;
  credits: number;
  optional?: number;
}

export interface AuthDeps {
  tollgate: Tollgate;
  /** Also send the IETF RateLimit / RateLimit-Policy fields. */
  ietfHeaders: boolean;
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
  /** Over the budget: the 429 to send, not counted. */
  | { valid: true; caller: Caller; reply: HttpReply }
  /**
   * Go on, with the rate-limit headers for the reply: counted, with the credit pre-check's
   * answer when the price has credits; or, when the price counts no request, only read, with
   * the account's usage from the same round trip.
   */
  | { valid: true; caller: Caller; reply?: undefined; headers: Record<string, string>; credits?: CreditPrecheck; usage?: Usage };

type CreditPrecheck = NonNullable<Allowed['credits']>;

/**
 * Checks a credential and admits its request at `price` on the credential's surface, or reads
 * the usage when the price counts no request. A counted request goes through the library's
 * checkRequest, the step its rateLimit middlewares take, which also writes the headers and the
 * 429: a key or session is verified with the admit in one script (keys.verify); an OAuth token
 * is resolved by the verifier hook, then its account admitted. Short credits are not refused
 * here: the handler answers 402 after it has validated the request (docs/example-service.md#transcripts-and-comments).
 */
export async function checkCredential(deps: AuthDeps, credential: Credential, price: Price, request: ApiRequest): Promise<Checked> {
  const surface: Surface = credential.via === 'session' ? 'web' : 'api';
  const { tollgate } = deps;
  const headerOptions = { ietf: deps.ietfHeaders, policy: surface };
  const counted = { tollgate, surface, credits: price.credits, ietfHeaders: deps.ietfHeaders, requestId: () => request.requestId };
  if (credential.via === 'oauth') {
    const caller = await tokenCaller(deps, credential.value);
    if (caller === null) return { valid: false };
    if (price.requests === 0) {
      try {
        const usage = await tollgate.usage(caller.accountId, { surface });
        return { valid: true, caller, headers: rateLimitHeaders(usage, headerOptions), usage };
      } catch (error) {
        // A token whose account is gone proves nothing.
        if (isTollgateError(error, 'account_not_found')) return { valid: false };
        throw error;
      }
    }
    return checkedOf(await checkRequest({ ...counted, subject: () => caller.accountId }, null), () => caller, headerOptions);
  }
  const caller = (accountId: string): Caller => ({ accountId, surface, via: credential.via });
  if (price.requests === 0) {
    const verified = await tollgate.keys.verify(credential.value, { surface, usage: true });
    if (!verified.ok) return { valid: false };
    return { valid: true, caller: caller(verified.subject), headers: rateLimitHeaders(verified.usage, headerOptions), usage: verified.usage };
  }
  return checkedOf(await checkRequest({ ...counted, key: () => credential.value }, null), caller, headerOptions);
}

/** checkRequest's decision as the guard takes it; the store's outage is thrown for its fail-open or 503 rule. */
function checkedOf(decision: RateLimitDecision, caller: (accountId: string) => Caller, headerOptions: { ietf: boolean; policy: string }): Checked {
  if (decision.ok) return { valid: true, caller: caller(decision.pass.subject), headers: decision.pass.headers, credits: decision.pass.admission?.credits };
  const { refusal } = decision;
  if (refusal.type === 'unavailable') throw refusal.error;
  if (refusal.type === 'unauthorized') return { valid: false };
  const admission = refusal.admission!;
  if (!admission.ok) return { valid: true, caller: caller(refusal.subject!), reply: refusal.reply };
  // insufficient_quota: counted and within the windows; the handler answers the 402.
  return { valid: true, caller: caller(refusal.subject!), headers: rateLimitHeaders(admission, headerOptions), credits: admission.credits };
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
