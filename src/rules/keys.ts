/**
 * API keys' rules: what issuing, listing and verifying a key take and give, a key's shape
 * (<keyPrefix>_<subject>_<keyId>_<secret>) and the digest stored for it.
 */
import { createHash } from 'node:crypto';
import { InvalidInputError } from '../errors.ts';
import type { Admission } from './limits.ts';
import type { Usage } from './usage.ts';
import { count, describe } from './validate.ts';
import { validateWindows, windowsFromSpec, windowsSpec, type Window } from './windows.ts';

/** keys.issue's options. */
export interface IssueKeyOptions {
  /** A label shown by list (up to 40 printable characters). */
  name?: string;
  /** The key stops working this long after it is issued. Default: never. */
  ttlMs?: number;
  /** The surfaces the key may be used on. Default: every surface. */
  surfaces?: string[];
  /**
   * The key's own windows per surface, checked together with its subject's, all or none, in
   * the same round trip (docs/limits.md, "Per-key limits"). Default: none.
   */
  limits?: Record<string, Window[]>;
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
  /** The key's own windows per surface, when it was issued with some. */
  limits?: Record<string, Window[]>;
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
export type KeyRefusal = 'malformed' | 'unknown' | 'expired' | 'surface_not_allowed';

/** keys.verify's answer: the key refused, or its subject and the admission (see Admission). */
export type Verification = KeyRefused | (KeyAccepted & { admission: Admission });

/** keys.verify's answer with `usage: true`: the key refused, or its subject and usage. */
export type UsageVerification = KeyRefused | (KeyAccepted & { usage: Usage });

/** A key refused: nothing was counted on its subject (answer 401). */
export interface KeyRefused {
  /** Refused. */
  ok: false;
  /**
   * Refused: the same as `ok`.
   * @deprecated Read `ok`, the success flag of every outcome; `valid` stays until 1.0.
   */
  valid: false;
  /** Why the key was refused. */
  reason: KeyRefusal;
}

/** A key that is one of the subject's, valid on the surface. */
export interface KeyAccepted {
  /** The key is valid (the admission or usage says the rest). */
  ok: true;
  /**
   * Valid: the same as `ok`.
   * @deprecated Read `ok`, the success flag of every outcome; `valid` stays until 1.0.
   */
  valid: true;
  /** The key's subject. */
  subject: string;
  /** The key's id. */
  keyId: string;
}

/** A key refused for `reason`. */
export function keyRefused(reason: KeyRefusal): KeyRefused {
  return { ok: false, valid: false, reason };
}

/** A valid key of `subject`, with what the call read or counted (`admission` or `usage`). */
export function keyAccepted<T extends { admission: Admission } | { usage: Usage }>(subject: string, keyId: string, answer: T): KeyAccepted & T {
  return { ok: true, valid: true, subject, keyId, ...answer };
}

const KEY_ID = /^[0-9a-f]{10}$/;
const SECRET = /^[0-9a-f]{32}$/;
const SUBJECT = /^[A-Za-z0-9_.:-]{1,128}$/;

/** The digest stored for a key: SHA-256 of the whole key, 22 base64url characters (132 bits). */
export function keyDigest(key: string): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 22);
}

/** The subject, key id and digest of a presented key, or null when it is not one of ours. */
export function parseKey(key: unknown, keyPrefix: string): { subject: string; keyId: string; digest: string } | null {
  if (typeof key !== 'string' || key.length > 256 || !key.startsWith(`${keyPrefix}_`)) return null;
  const parts = key.slice(keyPrefix.length + 1).split('_');
  if (parts.length < 3) return null;
  const secret = parts.pop()!;
  const keyId = parts.pop()!;
  const subject = parts.join('_');
  if (!KEY_ID.test(keyId) || !SECRET.test(secret) || !SUBJECT.test(subject)) return null;
  return { subject, keyId, digest: keyDigest(key) };
}

/** A checked key id (shared with tollgate/model). */
export function keyIdArg(keyId: unknown): string {
  if (typeof keyId !== 'string' || !KEY_ID.test(keyId)) throw new InvalidInputError(`Key id must be 10 hex digits (got ${describe(keyId)})`);
  return keyId;
}

/** A checked issue: the name, the ttl (0: never expires) and the surfaces ("*": any), shared with tollgate/model. */
export function keyIssueArgs(
  options: IssueKeyOptions,
  accountSurface: (surface: unknown) => string,
): { name: string; ttlMs: number; surfaces: string; limits: string } {
  const name = options.name ?? '';
  // Kept short so that the key's fields stay under 64 bytes: the account hash keeps its compact form.
  if (typeof name !== 'string' || !/^[\x20-\x7e]{0,40}$/.test(name))
    throw new InvalidInputError(`Key name must be 0-40 printable ASCII characters (got ${describe(name)})`);
  const ttlMs = options.ttlMs === undefined ? 0 : count('ttlMs', options.ttlMs, 1);
  const surfaces = options.surfaces === undefined ? '*' : surfacesArg(options.surfaces, accountSurface);
  return { name, ttlMs, surfaces, limits: keyLimitsArg(options.limits, accountSurface) };
}

/** A key's surfaces: each one some plan has (a typo would make a key that never works). */
function surfacesArg(surfaces: unknown, accountSurface: (surface: unknown) => string): string {
  if (!Array.isArray(surfaces) || surfaces.length === 0) throw new InvalidInputError('surfaces must be a non-empty list of surface names');
  return [...new Set(surfaces.map((s) => accountSurface(s)))].join(',');
}

/** A key's own windows as lib/apiKeys.lua stores them: 'surface=spec;...', a spec's spaces as commas; '' for none. */
function keyLimitsArg(limits: unknown, accountSurface: (surface: unknown) => string): string {
  if (limits === undefined) return '';
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) throw new InvalidInputError('Key limits must be { [surface]: windows }');
  return Object.entries(limits)
    .map(([surface, windows]) => `${accountSurface(surface)}=${windowsSpec(validateWindows(`limits.${surface}`, windows)).replaceAll(' ', ',')}`)
    .join(';');
}

/** The windows per surface of a stored limits text (keyLimitsArg's). */
export function keyLimitsOf(stored: string): Record<string, Window[]> {
  return Object.fromEntries(
    stored.split(';').map((part) => {
      const [surface, spec] = part.split('=') as [string, string];
      return [surface, windowsFromSpec(spec.replaceAll(',', ' '))];
    }),
  );
}
