/** API keys' requests and answers: what issuing, listing and verifying a key take and give. */
import type { Admission } from "./limits.ts";
import type { Usage } from "./usage.ts";

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

