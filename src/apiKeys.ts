/**
 * API keys (SPEC §9, §10): issued per subject, shown once, stored only as a digest in the
 * subject's slot, and checked together with the admit in one script (lua/admit.lua), so an
 * authenticated request is one round trip. A key reads
 *   <keyPrefix>_<subject>_<keyId>_<secret>
 * so that it carries what routes it to its subject's slot. Keys may expire (website sessions
 * are keys that expire and may use only `web`); an unknown, revoked or expired key, or one
 * used on a surface it may not use, counts nothing on the subject.
 * Keys live in the subject's account hash (lua/lib/apiKeys.lua), so the admit that checks a key
 * reads it together with the windows.
 * Scripts: lua/issueKey.lua, lua/revokeKey.lua, lua/listKeys.lua, lua/verifyKey.lua, lua/usage.lua.
 */
import { createHash, randomBytes } from "node:crypto";
import type { Context } from "./context.ts";
import { AccountNotFoundError, InvalidInputError, KeyLimitError } from "./errors.ts";
import { admissionFrom, type Admission } from "./limits.ts";
import type { SubjectKeys } from "./redisKeys.ts";
import { issueKey, listKeys, revokeKey, usage as usageScript, verifyKey } from "./scripts/bundle.generated.ts";
import { afterDue } from "./sweep.ts";
import { Code } from "./scripts/codes.ts";
import { field, int, list, text } from "./scripts/reply.ts";
import { usageFrom, type Usage } from "./usage.ts";
import { count, describe } from "./validate.ts";
import { surfaceName } from "./windows.ts";

/** keys.issue's options. */
export interface IssueKeyOptions {
  /** A label shown by list (up to 40 printable characters). */
  name?: string;
  /** The key stops working this long after it is issued. Default: never. */
  ttlMs?: number;
  /** The surfaces the key may be used on. Default: every surface. */
  surfaces?: string[];
}

/** A key just issued: the only time the key itself is seen. */
export interface IssuedKey {
  /** The key itself: show it once, it cannot be read back. */
  key: string;
  /** The key's id (10 hex digits), to list and revoke it by. */
  keyId: string;
  /** When it was issued (ms since the epoch). */
  createdAt: number;
  /** When it stops working; null: never. */
  expiresAt: number | null;
}

/** A key as keys.list shows it (never the key itself). */
export interface KeyInfo {
  /** The key's id. */
  keyId: string;
  /** The label given at issue. */
  name: string;
  /** When it was issued (ms since the epoch). */
  createdAt: number;
  /** When it stops working; null: never. */
  expiresAt: number | null;
  /** null: every surface. */
  surfaces: string[] | null;
}

/** keys.verify's options: what the admit counts, or `usage: true` to read usage instead. */
export interface VerifyOptions {
  /** Default "api". */
  surface?: string;
  /** Requests this one counts as. Default 1. */
  cost?: number;
  /** Credits the balance must hold (pre-check). Default 0. */
  credits?: number;
  /** Instead of admitting, read the subject's usage (counting nothing). */
  usage?: boolean;
}

/** Why a key was refused (answer 401 for each): not one of ours, unknown or revoked, expired, or not for this surface. */
export type KeyRefusal = "malformed" | "unknown" | "expired" | "surface_not_allowed";

/** keys.verify's answer: the key refused, or its subject and the admission (see Admission). */
export type Verification =
  | { valid: false; reason: KeyRefusal }
  | { valid: true; subject: string; keyId: string; admission: Admission };

/** keys.verify's answer with `usage: true`: the key refused, or its subject and usage. */
export type UsageVerification =
  | { valid: false; reason: KeyRefusal }
  | { valid: true; subject: string; keyId: string; usage: Usage };

const KEY_ID = /^[0-9a-f]{10}$/;
const SECRET = /^[0-9a-f]{32}$/;
const SUBJECT = /^[A-Za-z0-9_.:-]{1,128}$/;

/** The digest stored for a key: SHA-256 of the whole key, 22 base64url characters (132 bits). */
export function keyDigest(key: string): string {
  return createHash("sha256").update(key).digest("base64url").slice(0, 22);
}

/** The subject, key id and digest of a presented key, or null when it is not one of ours. */
export function parseKey(key: unknown, keyPrefix: string): { subject: string; keyId: string; digest: string } | null {
  if (typeof key !== "string" || key.length > 256 || !key.startsWith(`${keyPrefix}_`)) return null;
  const parts = key.slice(keyPrefix.length + 1).split("_");
  if (parts.length < 3) return null;
  const secret = parts.pop()!;
  const keyId = parts.pop()!;
  const subject = parts.join("_");
  if (!KEY_ID.test(keyId) || !SECRET.test(secret) || !SUBJECT.test(subject)) return null;
  return { subject, keyId, digest: keyDigest(key) };
}

/** A checked key id (shared with tollgate/model). */
export function keyIdArg(keyId: unknown): string {
  if (typeof keyId !== "string" || !KEY_ID.test(keyId)) throw new InvalidInputError(`Key id must be 10 hex digits (got ${describe(keyId)})`);
  return keyId;
}

/** A checked issue: the name, the ttl (0: never expires) and the surfaces ("*": any), shared with tollgate/model. */
export function keyIssueArgs(options: IssueKeyOptions, accountSurface: (surface: unknown) => string): { name: string; ttlMs: number; surfaces: string } {
  const name = options.name ?? "";
  // Kept short so that the key's fields stay under 64 bytes: the account hash keeps its compact form.
  if (typeof name !== "string" || !/^[\x20-\x7e]{0,40}$/.test(name)) throw new InvalidInputError(`Key name must be 0-40 printable ASCII characters (got ${describe(name)})`);
  const ttlMs = options.ttlMs === undefined ? 0 : count("ttlMs", options.ttlMs, 1);
  const surfaces = options.surfaces === undefined ? "*" : surfacesArg(options.surfaces, accountSurface);
  return { name, ttlMs, surfaces };
}

/** API keys (`tollgate.keys`): issued per subject, stored as a digest, checked with the admit in one round trip. */
export class Keys {
  /** @internal Made by createTollgate. */
  constructor(private readonly ctx: Context) {}

  /** Issues a key for a subject that has an account; the key is in the answer only. */
  async issue(subject: string, options: IssueKeyOptions = {}): Promise<IssuedKey> {
    const redisKeys = this.ctx.redisKeys(subject);
    const { name, ttlMs, surfaces } = keyIssueArgs(options, this.ctx.accountSurface);
    const keyId = randomBytes(5).toString("hex");
    const key = `${this.ctx.keyPrefix}_${redisKeys.subject}_${keyId}_${randomBytes(16).toString("hex")}`;
    const reply = await this.ctx.runner.run(issueKey, redisKeys, {
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
      const expiresAt = int(field(k, "expiresAt"));
      const surfaces = text(field(k, "surfaces"));
      return {
        keyId: text(field(k, "keyId")),
        name: text(field(k, "name")),
        createdAt: int(field(k, "createdAt")),
        expiresAt: expiresAt > 0 ? expiresAt : null,
        surfaces: surfaces === "*" ? null : surfaces.split(","),
      };
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
   * if (!check.valid) return reply(401);
   * if (!check.admission.allowed) return reply(rateLimitedReply(check.admission, requestId)); // 429
   * if (!check.admission.credits?.sufficient) return reply(402);
   * const headers = rateLimitHeaders(check.admission); // on the endpoint's response
   * // check.subject is the key's account: charge it once the work is done.
   * ```
   */
  verify(key: string, options: VerifyOptions & { usage: true }): Promise<UsageVerification>;
  verify(key: string, options?: VerifyOptions & { usage?: false }): Promise<Verification>;
  async verify(key: string, options: VerifyOptions = {}): Promise<Verification | UsageVerification> {
    const surface = this.ctx.accountSurface(options.surface ?? "api");
    const parsed = parseKey(key, this.ctx.keyPrefix);
    if (parsed === null) return { valid: false, reason: "malformed" };
    const redisKeys = this.ctx.redisKeys(parsed.subject);
    try {
      if (options.usage === true) return await this.verifyUsage(redisKeys, surface, parsed);
      return await this.verifyAdmit(redisKeys, surface, parsed, options);
    } catch (error) {
      // A key whose account is gone proves nothing.
      if (error instanceof AccountNotFoundError) return { valid: false, reason: "unknown" };
      throw error;
    }
  }

  private async verifyAdmit(redisKeys: SubjectKeys, surface: string, parsed: { keyId: string; digest: string }, options: VerifyOptions): Promise<Verification> {
    const cost = count("cost", options.cost ?? 1, 1);
    const credits = count("Credits to pre-check", options.credits ?? 0);
    const cache = this.ctx.denyCache;
    const cacheKey = cache && `k\0${parsed.digest}\0${surface}`;
    if (cache && cacheKey) {
      const cached = cache.get(cacheKey, cost);
      if (cached) return { valid: true, subject: redisKeys.subject, keyId: parsed.keyId, admission: cached };
    }
    const stagger = this.ctx.staggerOf(redisKeys.subject);
    const reply = await this.ctx.runner.run(verifyKey, redisKeys, { surface, cost, credits, stagger, keyId: parsed.keyId, keyDigest: parsed.digest });
    if (reply.code === Code.KEY_REFUSED) return { valid: false, reason: reply.reason };
    const admission = admissionFrom(reply, credits);
    if (!admission.allowed && cache && cacheKey) cache.remember(cacheKey, redisKeys.subject, admission, cost);
    return { valid: true, subject: redisKeys.subject, keyId: parsed.keyId, admission };
  }

  private async verifyUsage(redisKeys: SubjectKeys, surface: string, parsed: { keyId: string; digest: string }): Promise<UsageVerification> {
    const params = { surface, stagger: this.ctx.staggerOf(redisKeys.subject), keyId: parsed.keyId, keyDigest: parsed.digest };
    const reply = await afterDue(this.ctx, redisKeys, () => this.ctx.runner.run(usageScript, redisKeys, params));
    if (reply.code === Code.KEY_REFUSED) return { valid: false, reason: reply.reason };
    return { valid: true, subject: redisKeys.subject, keyId: parsed.keyId, usage: usageFrom(reply, surface) };
  }
}

/** A key's surfaces: each one some plan has (a typo would make a key that never works). */
function surfacesArg(surfaces: unknown, accountSurface: (surface: unknown) => string): string {
  if (!Array.isArray(surfaces) || surfaces.length === 0) throw new InvalidInputError("surfaces must be a non-empty list of surface names");
  return [...new Set(surfaces.map((s) => accountSurface(s)))].join(",");
}
