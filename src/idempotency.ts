/**
 * Idempotency-Key support for opening holds. Keys are scoped per subject and stored
 * with a fingerprint of the canonical request body. `begin` runs before validation and before
 * the host does its own work: it replays a stored outcome, refuses a reused key with another
 * body, or claims the key for this request (so a concurrent duplicate gets "in use", never a
 * second hold). The claim is a lease of idempotencyLockMs that the holder renews while it
 * works (`renew`): a holder that crashed blocks the key for that long at most. holds.open
 * re-checks the key and stores the outcome in the same atomic step, so a claim that lapsed
 * under a slow holder can cost that holder a 409, never a second hold.
 * Scripts: beginIdempotency (also renews), releaseIdempotency.
 */
import { createHash, randomUUID } from "node:crypto";
import { canonicalJson } from "./canonicalJson.ts";
import type { Context } from "./context.ts";
import { holdFromReply, type Hold } from "./records.ts";
import { beginIdempotency, releaseIdempotency } from "./scripts/bundle.generated.ts";
import { Code } from "./scripts/codes.ts";
import { printableKey } from "./validate.ts";

/** The key, the body's fingerprint and the token that holds the key while it is pending. */
export interface IdempotencyClaim {
  /** The Idempotency-Key. */
  key: string;
  /** SHA-256 of the canonical JSON of the request body (fingerprint). */
  fingerprint: string;
  /** Holds the pending key for this request; pass the claim to holds.open or release. */
  token: string;
}

/**
 * idempotency.begin's answer: `new` (go on, with the claim), `replay` (answer the stored
 * outcome again), `reused` (422: another body) or `in_use` (409: a request with it is pending).
 */
export type BeginOutcome =
  | { state: "new"; claim: IdempotencyClaim }
  | { state: "replay"; outcome: StoredOutcome }
  | { state: "reused" }
  | { state: "in_use" };

/** A stored outcome: the opened hold, or the open-hold cap refusal. */
export type StoredOutcome =
  | { kind: "hold"; hold: Hold }
  | { kind: "hold_limit_reached"; active: number; cap: number };

/**
 * SHA-256 of the body's canonical JSON (RFC 8785): equal bodies, whatever
 * their key order, share it. A body that is not JSON (a BigInt, a cycle, nesting past 256
 * levels, ...) is InvalidInputError.
 */
export function fingerprint(body: unknown): string {
  return createHash("sha256").update(canonicalJson(body)).digest("hex");
}

/** A stored outcome from its code and JSON. */
export function decodeStoredOutcome(code: number, payload: string): StoredOutcome {
  const data = JSON.parse(payload) as Record<string, unknown>;
  if (code === Code.HOLD_LIMIT) return { kind: "hold_limit_reached", active: Number(data.active), cap: Number(data.cap) };
  return { kind: "hold", hold: holdFromReply(data) };
}

/** Idempotency-Key support for opening holds (`tollgate.idempotency`). */
export class Idempotency {
  /** @internal Made by createTollgate. */
  constructor(private readonly ctx: Context) {}

  /** Looks the key up before the request is validated, so that a replay or a refusal comes first. */
  async begin(subject: string, key: string, body: unknown): Promise<BeginOutcome> {
    const keys = this.ctx.keys(subject);
    const claim = { key: printableKey("Idempotency-Key", key), fingerprint: fingerprint(body), token: randomUUID() };
    const reply = await this.ctx.runner.run(beginIdempotency, keys, { record: keys.idempotency(claim.key), fingerprint: claim.fingerprint, token: claim.token });
    const code = reply[0];
    if (code === Code.REPLAYED) return { state: "replay", outcome: decodeStoredOutcome(Number(reply[2]), String(reply[1])) };
    if (code === Code.IDEMPOTENCY_REUSED) return { state: "reused" };
    if (code === Code.IDEMPOTENCY_IN_USE) return { state: "in_use" };
    return { state: "new", claim };
  }

  /** Extends the claim by idempotencyLockMs while the work goes on; false when it is no longer this request's. */
  async renew(subject: string, claim: IdempotencyClaim): Promise<boolean> {
    const keys = this.ctx.keys(subject);
    // Claiming the key again with the same token extends the claim; anything else says it is lost.
    const reply = await this.ctx.runner.run(beginIdempotency, keys, { record: keys.idempotency(claim.key), fingerprint: claim.fingerprint, token: claim.token });
    return reply[0] === Code.OK;
  }

  /** Frees a pending key after an outcome that is not stored (400/402/403). */
  async release(subject: string, claim: IdempotencyClaim): Promise<void> {
    const keys = this.ctx.keys(subject);
    await this.ctx.runner.run(releaseIdempotency, keys, { record: keys.idempotency(claim.key), token: claim.token });
  }
}
