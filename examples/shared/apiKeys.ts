/**
 * API keys (SPEC §9): random, shown once, stored only as a SHA-256 hash, compared in constant
 * time. A key reads `tgk_<key id>_<secret>`; the record is found by the key id, so the secret
 * never serves as a lookup index and is only ever compared with timingSafeEqual.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AppRedis } from './redis.ts';

const KEY_FORMAT = /^tgk_([0-9a-f]{16})_([0-9a-f]{64})$/;
const DUMMY_HASH = createHash('sha256').update('no such key').digest();

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

export class ApiKeys {
  constructor(
    private readonly redis: AppRedis,
    private readonly prefix: string,
  ) {}

  /** Issues a key for the account; the caller shows it once, nobody can read it back. */
  async issue(accountId: string): Promise<string> {
    const keyId = randomBytes(8).toString('hex');
    const secret = randomBytes(32).toString('hex');
    await this.redis.hSet(this.recordKey(keyId), { account: accountId, hash: sha256(secret).toString('hex') });
    return `tgk_${keyId}_${secret}`;
  }

  /** The account owning the key, or null when the key is malformed, unknown or wrong. */
  async verify(apiKey: string): Promise<string | null> {
    const match = KEY_FORMAT.exec(apiKey);
    if (!match) return null;
    const [, keyId, secret] = match as unknown as [string, string, string];
    const record = await this.redis.hGetAll(this.recordKey(keyId));
    const stored = typeof record.hash === 'string' ? Buffer.from(record.hash, 'hex') : DUMMY_HASH;
    const equal = stored.length === 32 && timingSafeEqual(stored, sha256(secret));
    return equal && typeof record.account === 'string' ? record.account : null;
  }

  private recordKey(keyId: string): string {
    return `${this.prefix}:apikey:${keyId}`;
  }
}
