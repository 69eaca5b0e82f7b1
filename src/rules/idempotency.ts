// Idempotency-Key outcomes: the claim a new request holds while it works, and what a key
// already used answers.
import type { Hold } from './records.ts';

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
export type BeginOutcome = { state: 'new'; claim: IdempotencyClaim } | { state: 'replay'; outcome: StoredOutcome } | { state: 'reused' } | { state: 'in_use' };

/** A stored outcome: the opened hold, or the open-hold cap refusal. */
export type StoredOutcome = { kind: 'hold'; hold: Hold } | { kind: 'hold_limit_reached'; active: number; cap: number };
