/**
 * API keys in the reference model (docs/keys.md): issued per subject and shown once, kept as
 * a digest, checked with the admit (or the usage read) of their subject. An unknown, revoked
 * or expired key, or one used on a surface it may not use, counts nothing.
 */
import { randomBytes } from 'node:crypto';
import {
  keyAccepted,
  keyDigest,
  keyIdArg,
  keyIssueArgs,
  keyLimitsOf,
  keyRefused,
  parseKey,
  type IssueKeyOptions,
  type IssuedKey,
  type KeyInfo,
  type KeyRefusal,
  type UsageVerification,
  type Verification,
  type VerifyOptions,
} from '../rules/keys.ts';
import { AccountNotFoundError, KeyLimitError } from '../errors.ts';
import { count, subjectId } from '../rules/validate.ts';
import type { ModelAccount, ModelCore, ModelKey } from './core.ts';
import type { ModelLimits } from './limits.ts';
import { usageOf } from './usage.ts';

/** As tollgate.keys: issue, parse, revoke, list, verify. */
export class ModelKeys {
  /** @internal Made by TollgateModel. */
  constructor(
    private readonly core: ModelCore,
    private readonly limits: ModelLimits,
  ) {}

  /** Issues a key for a subject that has an account; the key is in the answer only. */
  issue(subject: string, options: IssueKeyOptions = {}): IssuedKey {
    const id = subjectId(subject);
    const { name, ttlMs, surfaces, limits } = keyIssueArgs(options, this.core.accountSurface);
    const a = this.core.account(id);
    const keyId = randomBytes(5).toString('hex');
    if (a.keys.has(keyId)) return this.issue(subject, options);
    const key = `${this.core.keyPrefix}_${id}_${keyId}_${randomBytes(16).toString('hex')}`;
    const now = this.core.now();
    const expiresAt = ttlMs > 0 ? now + ttlMs : 0;
    const live = liveKeys(a, now);
    const lasting = live.filter((k) => k.expiresAt === 0);
    const expiring = live.filter((k) => k.expiresAt > 0).sort((x, y) => x.expiresAt - y.expiresAt);
    if (expiresAt === 0 && lasting.length >= this.core.maxKeys) throw new KeyLimitError(id, this.core.maxKeys);
    // The expiring key that expires soonest gives way to a new one.
    if (expiresAt > 0) for (const gone of expiring.slice(0, Math.max(0, expiring.length - this.core.maxExpiringKeys + 1))) a.keys.delete(gone.keyId);
    const k: ModelKey = { keyId, digest: keyDigest(key), name, createdAt: now, expiresAt, surfaces: surfaces === '*' ? null : surfaces.split(',') };
    if (limits !== '') k.limits = { windows: keyLimitsOf(limits), slots: new Map() };
    a.keys.set(keyId, k);
    return { key, keyId, createdAt: now, expiresAt: expiresAt === 0 ? null : expiresAt };
  }

  /** The subject and key id a key names, or null when it is not one of ours. */
  parse(key: string): { subject: string; keyId: string } | null {
    const parsed = parseKey(key, this.core.keyPrefix);
    return parsed && { subject: parsed.subject, keyId: parsed.keyId };
  }

  /** Deletes a key: it stops working at once. Whether it existed. */
  revoke(subject: string, keyId: string): boolean {
    const id = subjectId(subject);
    keyIdArg(keyId);
    return this.core.state.get(id)?.keys.delete(keyId) ?? false;
  }

  /** The subject's keys that have not expired, oldest first. */
  list(subject: string): KeyInfo[] {
    const a = this.core.state.get(subjectId(subject));
    if (!a) return [];
    return liveKeys(a, this.core.now())
      .sort((x, y) => x.createdAt - y.createdAt)
      .map((k) => {
        const info: KeyInfo = {
          keyId: k.keyId,
          name: k.name,
          createdAt: k.createdAt,
          expiresAt: k.expiresAt > 0 ? k.expiresAt : null,
          surfaces: k.surfaces && [...k.surfaces],
        };
        if (k.limits) info.limits = structuredClone(k.limits.windows);
        return info;
      });
  }

  /** Checks a key and admits its subject (or, with `usage: true`, reads its usage). */
  verify(key: string, options: VerifyOptions & { usage: true }): UsageVerification;
  verify(key: string, options?: VerifyOptions & { usage?: false }): Verification;
  verify(key: string, options: VerifyOptions = {}): Verification | UsageVerification {
    const surface = this.core.accountSurface(options.surface ?? 'api');
    const parsed = parseKey(key, this.core.keyPrefix);
    if (parsed === null) return keyRefused('malformed');
    const subject = subjectId(parsed.subject);
    const cost = options.usage === true ? 0 : count('cost', options.cost ?? 1, 1);
    const credits = options.usage === true ? 0 : count('Credits to pre-check', options.credits ?? 0);
    const refusal = this.refusal(subject, parsed.keyId, parsed.digest, surface);
    if (refusal) return keyRefused(refusal);
    try {
      if (options.usage === true) return keyAccepted(subject, parsed.keyId, { usage: usageOf(this.core, subject, surface) });
      const own = this.core.state.get(subject)?.keys.get(parsed.keyId)?.limits;
      const windows = own?.windows[surface];
      if (own && windows) {
        let slots = own.slots.get(surface);
        if (slots === undefined) own.slots.set(surface, (slots = []));
        return keyAccepted(subject, parsed.keyId, { admission: this.limits.admitAccount(subject, surface, cost, credits, undefined, { windows, slots }) });
      }
      return keyAccepted(subject, parsed.keyId, { admission: this.limits.admitAccount(subject, surface, cost, credits) });
    } catch (error) {
      // A key whose account is gone proves nothing.
      if (error instanceof AccountNotFoundError) return keyRefused('unknown');
      throw error;
    }
  }

  /** Why a presented key may not be used on the surface now; undefined when it may. An expired key is deleted. */
  private refusal(subject: string, keyId: string, digest: string, surface: string): KeyRefusal | undefined {
    const a = this.core.state.get(subject);
    const k = a?.keys.get(keyId);
    if (!a || !k || k.digest !== digest) return 'unknown';
    if (k.expiresAt > 0 && this.core.now() >= k.expiresAt) {
      a.keys.delete(keyId);
      return 'expired';
    }
    if (k.surfaces !== null && !k.surfaces.includes(surface)) return 'surface_not_allowed';
    return undefined;
  }
}

/** The account's keys that have not expired; expired ones are deleted on the way. */
function liveKeys(a: ModelAccount, now: number): ModelKey[] {
  const live: ModelKey[] = [];
  for (const k of a.keys.values()) {
    if (k.expiresAt > 0 && now >= k.expiresAt) a.keys.delete(k.keyId);
    else live.push(k);
  }
  return live;
}
