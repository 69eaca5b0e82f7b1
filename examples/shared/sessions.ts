/**
 * Website sessions (SPEC §9): a demo login trades an API key for a random session id held in
 * an HttpOnly, SameSite=Lax cookie. Only the id's hash is stored, with a fixed lifetime.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { AppRedis } from './redis.ts';

export const SESSION_COOKIE = 'tg_session';
const SESSION_TTL_S = 24 * 3600;

export class Sessions {
  constructor(
    private readonly redis: AppRedis,
    private readonly prefix: string,
  ) {}

  async open(accountId: string): Promise<{ cookie: string }> {
    const id = randomBytes(24).toString('base64url');
    await this.redis.set(this.key(id), accountId, { EX: SESSION_TTL_S });
    return { cookie: `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${SESSION_TTL_S}` };
  }

  async resolve(id: string): Promise<string | null> {
    if (!/^[A-Za-z0-9_-]{32}$/.test(id)) return null;
    return this.redis.get(this.key(id));
  }

  async close(id: string): Promise<void> {
    await this.redis.del([this.key(id)]);
  }

  private key(id: string): string {
    return `${this.prefix}:session:${createHash('sha256').update(id).digest('hex')}`;
  }
}
