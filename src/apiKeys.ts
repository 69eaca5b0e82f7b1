/**
 * API keys: issued per subject, shown once, stored only as a digest in the
 * subject's slot, and checked together with the admit in one script, so an
 * authenticated request is one round trip. A key reads
 *   <keyPrefix>_<subject>_<keyId>_<secret>
 * so that it carries what routes it to its subject's slot. Keys may expire (website sessions
 * are keys that expire and may use only `web`); an unknown, revoked or expired key, or one
 * used on a surface it may not use, counts nothing on the subject.
 * Keys live in the subject's account hash, so the admit that checks a key
 * reads it together with the windows.
 * Scripts: issueKey, revokeKey, listKeys, verifyKey, usage.
 */
import { randomBytes } from 'node:crypto';
import type { Context } from './context.ts';
import { AccountNotFoundError, KeyLimitError } from './errors.ts';
import { admissionFrom } from './limits.ts';
import type { SubjectKeys } from './redisKeys.ts';
import { issueKey, listKeys, revokeKey, usage as usageScript, verifyKey } from './scripts/bundle.generated.ts';
import { withCurrentPlan } from './planEdits.ts';
import { afterDue } from './sweep.ts';
import { Code } from './scripts/codes.ts';
import {
  keyAccepted,
  keyDigest,
  keyIdArg,
  keyIssueArgs,
  keyLimitsOf,
  keyRefused,
  parseKey,
  type IssuedKey,
  type IssueKeyOptions,
  type KeyInfo,
  type UsageVerification,
  type Verification,
  type VerifyOptions,
} from './rules/keys.ts';
import { count } from './rules/validate.ts';
import { field, int, list, text } from './scripts/reply.ts';
import { usageFrom } from './usage.ts';

export type { IssuedKey, IssueKeyOptions, KeyAccepted, KeyInfo, KeyRefusal, KeyRefused, UsageVerification, Verification, VerifyOptions } from './rules/keys.ts';

/** API keys (`tollgate.keys`): issued per subject, stored as a digest, checked with the admit in one round trip. */
export class Keys {
  /** @internal Made by createTollgate. */
  constructor(private readonly ctx: Context) {}

  /** Issues a key for a subject that has an account; the key is in the answer only. */
  async issue(subject: string, options: IssueKeyOptions = {}): Promise<IssuedKey> {
    const redisKeys = this.ctx.redisKeys(subject);
    const { name, ttlMs, surfaces, limits } = keyIssueArgs(options, this.ctx.accountSurface);
    const keyId = randomBytes(5).toString('hex');
    const key = `${this.ctx.keyPrefix}_${redisKeys.subject}_${keyId}_${randomBytes(16).toString('hex')}`;
    const reply = await this.ctx.runner.run(issueKey, redisKeys, {
      limits,
      keyId,
      keyDigest: keyDigest(key),
      ttlMs,
      surfaces,
      name,
      maxKeys: this.ctx.maxKeys,
      maxExpiringKeys: this.ctx.maxExpiringKeys,
    });
    if (reply.code === Code.KEY_LIMIT) throw new KeyLimitError(redisKeys.subject, this.ctx.maxKeys);
    if (reply.code === Code.KEY_EXISTS) return this.issue(subject, options);
    return { key, keyId, createdAt: reply.createdAt, expiresAt: reply.expiresAt === 0 ? null : reply.expiresAt };
  }

  /** The subject and key id a key names, read from the key alone (no Redis call); null when it is not one of ours. */
  parse(key: string): { subject: string; keyId: string } | null {
    const parsed = parseKey(key, this.ctx.keyPrefix);
    return parsed && { subject: parsed.subject, keyId: parsed.keyId };
  }

  /** Deletes a key: it stops working at once. Returns whether it existed. */
  async revoke(subject: string, keyId: string): Promise<boolean> {
    const redisKeys = this.ctx.redisKeys(subject);
    keyIdArg(keyId);
    const reply = await this.ctx.runner.run(revokeKey, redisKeys, { keyId });
    this.ctx.denyCache?.forget(redisKeys.subject);
    return reply.revoked;
  }

  /** The subject's keys that have not expired, oldest first (never the keys themselves). */
  async list(subject: string): Promise<KeyInfo[]> {
    const redisKeys = this.ctx.redisKeys(subject);
    const reply = await this.ctx.runner.run(listKeys, redisKeys, {});
    // A list of {keyId, expiresAt, surfaces, createdAt, name}; cjson sends an empty one as {}.
    return list(reply.keys).map((k) => {
      const expiresAt = int(field(k, 'expiresAt'));
      const surfaces = text(field(k, 'surfaces'));
      const info: KeyInfo = {
        keyId: text(field(k, 'keyId')),
        name: text(field(k, 'name')),
        createdAt: int(field(k, 'createdAt')),
        expiresAt: expiresAt > 0 ? expiresAt : null,
        surfaces: surfaces === '*' ? null : surfaces.split(','),
      };
      const limits = (k as Record<string, unknown>).limits;
      if (typeof limits === 'string') info.limits = keyLimitsOf(limits);
      return info;
    });
  }

  /**
   * Checks a presented key and admits its subject on the surface (with the credit pre-check)
   * in one script; with `usage: true`, reads the subject's usage instead, counting nothing.
   * A refused key counts nothing on the subject.
   *
   * @example
   * ```ts
   * const check = await tollgate.keys.verify(apiKey, { surface: "api", credits: 1 });
   * if (!check.ok) return reply(401);
   * if (!check.admission.ok) return reply(rateLimitedReply(check.admission, requestId)); // 429
   * if (!check.admission.credits?.sufficient) return reply(402);
   * const headers = rateLimitHeaders(check.admission); // on the endpoint's response
   * // check.subject is the key's account: charge it once the work is done.
   * ```
   */
  verify(key: string, options: VerifyOptions & { usage: true }): Promise<UsageVerification>;
  verify(key: string, options?: VerifyOptions & { usage?: false }): Promise<Verification>;
  async verify(key: string, options: VerifyOptions = {}): Promise<Verification | UsageVerification> {
    const surface = this.ctx.accountSurface(options.surface ?? 'api');
    const parsed = parseKey(key, this.ctx.keyPrefix);
    if (parsed === null) return keyRefused('malformed');
    const redisKeys = this.ctx.redisKeys(parsed.subject);
    try {
      if (options.usage === true) return await this.verifyUsage(redisKeys, surface, parsed);
      return await this.verifyAdmit(redisKeys, surface, parsed, options);
    } catch (error) {
      // A key whose account is gone proves nothing.
      if (error instanceof AccountNotFoundError) return keyRefused('unknown');
      throw error;
    }
  }

  private async verifyAdmit(redisKeys: SubjectKeys, surface: string, parsed: { keyId: string; digest: string }, options: VerifyOptions): Promise<Verification> {
    const cost = count('cost', options.cost ?? 1, 1);
    const credits = count('Credits to pre-check', options.credits ?? 0);
    const cache = this.ctx.denyCache;
    const cacheKey = cache && `k\0${parsed.digest}\0${surface}`;
    if (cache && cacheKey) {
      const cached = cache.get(cacheKey, cost);
      if (cached) return keyAccepted(redisKeys.subject, parsed.keyId, { admission: cached });
    }
    const stagger = this.ctx.staggerOf(redisKeys.subject);
    const reply = await withCurrentPlan(this.ctx, redisKeys, () =>
      this.ctx.runner.run(verifyKey, redisKeys, { surface, cost, credits, stagger, keyId: parsed.keyId, keyDigest: parsed.digest }),
    );
    if (reply.code === Code.KEY_REFUSED) return keyRefused(reply.reason);
    const admission = admissionFrom(reply, credits, `${surface}:`);
    if (!admission.ok && cache && cacheKey) cache.remember(cacheKey, redisKeys.subject, admission, cost);
    return keyAccepted(redisKeys.subject, parsed.keyId, { admission });
  }

  private async verifyUsage(redisKeys: SubjectKeys, surface: string, parsed: { keyId: string; digest: string }): Promise<UsageVerification> {
    const params = { surface, stagger: this.ctx.staggerOf(redisKeys.subject), keyId: parsed.keyId, keyDigest: parsed.digest };
    const reply = await afterDue(this.ctx, redisKeys, () => this.ctx.runner.run(usageScript, redisKeys, params));
    if (reply.code === Code.KEY_REFUSED) return keyRefused(reply.reason);
    return keyAccepted(redisKeys.subject, parsed.keyId, { usage: usageFrom(reply, surface) });
  }
}
