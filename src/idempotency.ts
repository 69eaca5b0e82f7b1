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
import { createHash, randomUUID } from 'node:crypto';
import { canonicalJson } from './canonicalJson.ts';
import type { Context } from './context.ts';
import { holdFromJson } from './records.ts';
import type { IdempotencyInput } from './rules/holds.ts';
import type { BeginOutcome, IdempotencyClaim, StoredOutcome } from './rules/idempotency.ts';
import { printableKey } from './rules/validate.ts';
import { beginIdempotency, releaseIdempotency } from './scripts/bundle.generated.ts';
import { Code } from './scripts/codes.ts';
import { field, int } from './scripts/reply.ts';

export type { BeginOutcome, IdempotencyClaim, StoredOutcome };

/**
 * SHA-256 of the body's canonical JSON (RFC 8785): equal bodies, whatever
 * their key order, share it. A body that is not JSON (a BigInt, a cycle, nesting past 256
 * levels, ...) is InvalidInputError.
 */
export function fingerprint(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

/** The Idempotency-Key of an opening: a claim from begin, or a key and body (checked here). */
export function claimOf(input: IdempotencyInput | undefined): IdempotencyClaim | undefined {
  if (input === undefined) return undefined;
  if ('token' in input) return input;
  return { key: printableKey('Idempotency-Key', input.key), fingerprint: fingerprint(input.body), token: '' };
}

/**
 * A stored outcome from its code and parsed JSON: the open-hold cap
 * refusal, or the hold in its reply form.
 */
export function decodeStoredOutcome(code: number, outcome: unknown): StoredOutcome {
  if (code === Code.HOLD_LIMIT) return { kind: 'hold_limit_reached', active: int(field(outcome, 'active')), cap: int(field(outcome, 'cap')) };
  return { kind: 'hold', hold: holdFromJson(outcome) };
}

/** Idempotency-Key support for opening holds (`tollgate.idempotency`). */
export class Idempotency {
  /** @internal Made by createTollgate. */
  constructor(private readonly ctx: Context) {}

  /** Looks the key up before the request is validated, so that a replay or a refusal comes first. */
  async begin(subject: string, key: string, body: unknown): Promise<BeginOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const claim = { key: printableKey('Idempotency-Key', key), fingerprint: fingerprint(body), token: randomUUID() };
    const reply = await this.ctx.runner.run(beginIdempotency, redisKeys, {
      record: redisKeys.idempotency(claim.key),
      fingerprint: claim.fingerprint,
      token: claim.token,
    });
    const { code } = reply;
    if (reply.code === Code.REPLAYED) return { state: 'replay', outcome: decodeStoredOutcome(reply.storedCode, reply.outcome) };
    if (code === Code.IDEMPOTENCY_REUSED) return { state: 'reused' };
    if (code === Code.IDEMPOTENCY_IN_USE) return { state: 'in_use' };
    return { state: 'new', claim };
  }

  /** Extends the claim by idempotencyLockMs while the work goes on; false when it is no longer this request's. */
  async renew(subject: string, claim: IdempotencyClaim): Promise<boolean> {
    const redisKeys = this.ctx.redisKeys(subject);
    // Claiming the key again with the same token extends the claim; anything else says it is lost.
    const reply = await this.ctx.runner.run(beginIdempotency, redisKeys, {
      record: redisKeys.idempotency(claim.key),
      fingerprint: claim.fingerprint,
      token: claim.token,
    });
    return reply.code === Code.OK;
  }

  /** Frees a pending key after an outcome that is not stored (400/402/403). */
  async release(subject: string, claim: IdempotencyClaim): Promise<void> {
    const redisKeys = this.ctx.redisKeys(subject);
    await this.ctx.runner.run(releaseIdempotency, redisKeys, { record: redisKeys.idempotency(claim.key), token: claim.token });
  }
}
