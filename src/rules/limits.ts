/**
 * Request limits' rules: what an admit answers (a denial is a value, counted in no window),
 * and the checks of an admit's options before anything is counted.
 */
import { InvalidInputError } from '../errors.ts';
import type { PolicyTable } from './plans.ts';
import { count } from './validate.ts';
import { checkedWindows, type RateLimitState, type Window } from './windows.ts';

/** An admitted request: counted in every window of the surface. */
export interface Allowed {
  /** Admitted. */
  ok: true;
  /**
   * Admitted: the same as `ok`.
   * @deprecated Read `ok`, the success flag of every outcome; `allowed` stays until 1.0.
   */
  allowed: true;
  /** The most restrictive window (fewest remaining): what the headers show. */
  rateLimit: RateLimitState;
  /** Every window of the surface, in the plan's order. */
  windows: RateLimitState[];
  /** Present when a credit pre-check was asked: sufficient, or the counts for a 402. */
  credits?: { sufficient: boolean; balance: number; needed: number; available: number };
  /** Present when a shadow window would have denied this request: those windows (docs/limits.md). */
  shadowDenials?: RateLimitState[];
  /**
   * On a surface with a concurrency limit: the place this request took. Pass it to
   * limits.release when the request is done (a place nobody releases frees itself after its
   * leaseMs).
   */
  lease?: string;
}

/** A denied request, counted in no window: answer 429 with Retry-After (a value, not an error). */
export interface Denial {
  /** Denied. */
  ok: false;
  /**
   * Denied: the same as `ok`.
   * @deprecated Read `ok`, the success flag of every outcome; `allowed` stays until 1.0.
   */
  allowed: false;
  /**
   * rate_limited: a window is full; cost_exceeds_limit: the cost is above a window's limit;
   * concurrency: every place of the surface's concurrency limit is taken.
   */
  reason: 'rate_limited' | 'cost_exceeds_limit' | 'concurrency';
  /** The denying window with the latest retry. */
  rateLimit: RateLimitState;
  /** Every window of the surface, in the plan's order. */
  windows: RateLimitState[];
  /** When the request would fit; null when it never can (cost_exceeds_limit). */
  retryAfterMs: number | null;
  /** Present when a shadow window would have denied this request too: those windows. */
  shadowDenials?: RateLimitState[];
}

/** What limits.admit and keys.verify answer: `ok` tells which. */
export type Admission = Allowed | Denial;

/** What a shadow window or a concurrency limit adds to an admission, when present. */
export interface AdmissionExtras {
  /** The shadow windows that would have denied the request. */
  shadowDenials?: RateLimitState[] | undefined;
  /** The place taken under a concurrency limit (admitted requests only). */
  lease?: string | undefined;
}

/** An admission that counted the request (with the credit pre-check's counts when one was asked). */
export function admitted(rateLimit: RateLimitState, windows: RateLimitState[], credits?: Allowed['credits'], extras: AdmissionExtras = {}): Allowed {
  const admission: Allowed = credits === undefined ? { ok: true, allowed: true, rateLimit, windows } : { ok: true, allowed: true, rateLimit, windows, credits };
  if (extras.shadowDenials !== undefined) admission.shadowDenials = extras.shadowDenials;
  if (extras.lease !== undefined) admission.lease = extras.lease;
  return admission;
}

/** A denial: the request counted in no window. */
export function denied(
  reason: Denial['reason'],
  rateLimit: RateLimitState,
  windows: RateLimitState[],
  retryAfterMs: number | null,
  shadowDenials?: RateLimitState[],
): Denial {
  const denial: Denial = { ok: false, allowed: false, reason, rateLimit, windows, retryAfterMs };
  if (shadowDenials !== undefined) denial.shadowDenials = shadowDenials;
  return denial;
}

/** limits.admit's options. */
export interface AdmitOptions {
  /** Default "api". */
  surface?: string;
  /** Requests this one counts as (>= 1); denied whole when it does not fit. Default 1. */
  cost?: number;
  /** Pre-check that the balance holds at least this many credits (0: none). Needs an account. */
  credits?: number;
  /** Limit a subject without an account by this policy's windows. */
  policy?: string;
}

/** Which windows limits.peek and limits.reset look at: a surface, of the account or of a policy. */
export interface LimitTarget {
  /** Default "api". */
  surface?: string;
  /** The policy, for a subject without an account. */
  policy?: string;
}

/** The state of a surface's windows, read without counting. */
export interface LimitState {
  /** The most restrictive window (fewest remaining). */
  rateLimit: RateLimitState;
  /** Every window of the surface, in the plan's order. */
  windows: RateLimitState[];
}

/** The checked cost and pre-check of an admit (shared with tollgate/model). */
export function admitArgs(options: AdmitOptions): { cost: number; credits: number } {
  const cost = count('cost', options.cost ?? 1, 1);
  const credits = count('Credits to pre-check', options.credits ?? 0);
  if (credits > 0 && options.policy !== undefined) throw new InvalidInputError('A credit pre-check needs an account: a policy subject has no credits');
  return { cost, credits };
}

/** A policy's windows on a surface, checked against the table (shared with tollgate/model). */
export function policyWindows(policies: PolicyTable, policy: unknown, surface: string): readonly Window[] {
  if (typeof policy !== 'string' || !Object.hasOwn(policies, policy)) {
    throw new InvalidInputError(`Unknown policy ${JSON.stringify(policy)}; known policies: ${Object.keys(policies).join(', ') || 'none'}`);
  }
  const windows = policies[policy]![surface] && checkedWindows(policies[policy]![surface]!);
  if (windows === undefined) {
    throw new InvalidInputError(`Policy "${policy}" has no surface "${surface}" (it has ${Object.keys(policies[policy]!).join(', ')})`);
  }
  return windows;
}

/** A lease as limits.admit answers it: '<id>:<surface>:<policy, '' for an account>'. */
export function leaseText(id: number, target: string): string {
  return `${id}:${target}`;
}

/** What a lease names: its id, surface and policy (undefined: the account's). */
export function leaseOf(lease: unknown): { id: string; surface: string; policy: string | undefined } {
  const m = typeof lease === 'string' ? /^(\d{1,15}):([a-z0-9_-]{1,32}):(.*)$/.exec(lease) : null;
  if (!m) throw new InvalidInputError(`lease must be one an admission answered (got ${JSON.stringify(lease)})`);
  return { id: m[1]!, surface: m[2]!, policy: m[3] === '' ? undefined : m[3] };
}
