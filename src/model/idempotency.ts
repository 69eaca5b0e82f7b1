/**
 * Idempotency-Keys in the reference model (docs/idempotency.md): a key is claimed by `begin`
 * for a token until idempotencyLockMs from now (renewed by its holder), then holds the outcome
 * of the opening it was given to, for idempotencyTtlMs. A key is scoped to its subject.
 */
import { randomUUID } from 'node:crypto';
import { fingerprint } from '../idempotency.ts';
import type { BeginOutcome, IdempotencyClaim, StoredOutcome } from '../rules/idempotency.ts';
import { printableKey, subjectId } from '../rules/validate.ts';
import type { ModelCore, ModelIdempotencyRecord } from './core.ts';

/** What a key's record says to a request with this fingerprint and token: go on (null), or the answer. */
export type KeyCheck = null | { state: 'replay'; outcome: StoredOutcome } | { state: 'reused' } | { state: 'in_use' };

function recordKey(subject: string, key: string): string {
  return `${subject}\0${key}`;
}

/** The record's answer to a request with this fingerprint and token ('' for none). */
export function checkKey(core: ModelCore, subject: string, key: string, print: string, token: string): KeyCheck {
  const now = core.now();
  const rec = core.idempotency.get(recordKey(subject, key), now);
  if (rec === undefined) return null;
  if (rec.outcome === null && rec.claimedUntil <= now) return null;
  if (rec.fingerprint !== print) return { state: 'reused' };
  if (rec.outcome !== null) return { state: 'replay', outcome: structuredClone(rec.outcome) };
  if (rec.token !== token || token === '') return { state: 'in_use' };
  return null;
}

/** Stores the outcome under the key (replacing a claim), kept idempotencyTtlMs. */
export function storeOutcome(core: ModelCore, subject: string, key: string, print: string, outcome: StoredOutcome): void {
  const now = core.now();
  const rec: ModelIdempotencyRecord = { fingerprint: print, token: '', claimedUntil: 0, outcome: structuredClone(outcome) };
  core.idempotency.set(recordKey(subject, key), rec, now + core.idempotencyTtlMs, now);
}

/** As tollgate.idempotency: begin, renew, release. */
export class ModelIdempotency {
  /** @internal Made by TollgateModel. */
  constructor(private readonly core: ModelCore) {}

  /** Looks the key up before the request is validated: replay, reused, in use, or a new claim. */
  begin(subject: string, key: string, body: unknown): BeginOutcome {
    const id = subjectId(subject);
    const claim = { key: printableKey('Idempotency-Key', key), fingerprint: fingerprint(body), token: randomUUID() };
    const found = checkKey(this.core, id, claim.key, claim.fingerprint, claim.token);
    if (found) return found;
    this.claim(id, claim);
    return { state: 'new', claim };
  }

  /** Extends the claim by idempotencyLockMs; false when it is no longer this request's. */
  renew(subject: string, claim: IdempotencyClaim): boolean {
    const id = subjectId(subject);
    if (checkKey(this.core, id, claim.key, claim.fingerprint, claim.token)) return false;
    this.claim(id, claim);
    return true;
  }

  /** Frees a pending key held by this claim (an outcome that is not stored). */
  release(subject: string, claim: IdempotencyClaim): void {
    const id = subjectId(subject);
    const key = recordKey(id, claim.key);
    const rec = this.core.idempotency.get(key, this.core.now());
    if (rec && rec.outcome === null && rec.token === claim.token) this.core.idempotency.delete(key);
  }

  private claim(subject: string, claim: IdempotencyClaim): void {
    const now = this.core.now();
    const until = now + this.core.idempotencyLockMs;
    this.core.idempotency.set(
      recordKey(subject, claim.key),
      { fingerprint: claim.fingerprint, token: claim.token, claimedUntil: until, outcome: null },
      until,
      now,
    );
  }
}
