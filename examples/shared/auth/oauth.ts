/**
 * The OAuth hook (docs/example-service.md#endpoints): a host plugs in a verifier that turns a bearer token into the
 * account it was issued for (introspection, JWT checks, ...). The demo ships a verifier for
 * HMAC-signed tokens minted by POST /admin/accounts/:id/oauth-tokens; a token resolves to the
 * same account as its API key, so both share one `api` counter and one balance.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Resolves a bearer token to an account id, or null when it is not valid. */
export type TokenVerifier = (token: string) => Promise<string | null>;

export interface DemoOAuth {
  verify: TokenVerifier;
  issue(accountId: string, ttlMs?: number): { access_token: string; token_type: 'Bearer'; expires_in: number };
}

const TOKEN = /^oat_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/;

export function createDemoOAuth(secret: Buffer = randomBytes(32)): DemoOAuth {
  const sign = (payload: string) => createHmac('sha256', secret).update(payload).digest('base64url');
  return {
    issue(accountId, ttlMs = 3_600_000) {
      const payload = Buffer.from(JSON.stringify({ sub: accountId, exp: Date.now() + ttlMs })).toString('base64url');
      return { access_token: `oat_${payload}.${sign(payload)}`, token_type: 'Bearer', expires_in: Math.floor(ttlMs / 1000) };
    },
    async verify(token) {
      const match = TOKEN.exec(token);
      if (!match) return null;
      const [, payload, signature] = match as unknown as [string, string, string];
      if (!timingSafeEqual(Buffer.from(sign(payload)), Buffer.from(signature))) return null;
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { sub?: unknown; exp?: unknown };
      if (typeof claims.sub !== 'string' || typeof claims.exp !== 'number' || claims.exp <= Date.now()) return null;
      return claims.sub;
    },
  };
}
