/**
 * Request windows in the reference model: each window of a surface is counted under its own
 * counter, fixed or sliding, all or none, as the library counts them (docs/limits.md). A
 * counter is dropped once its window can no longer be read (two windows on), so memory stays
 * bounded by the subjects counted recently, whatever the number seen in all.
 */
import { mostRestrictive, type RateLimitState, type Window } from "../windows.ts";
import type { ExpiringMap } from "./expiring.ts";

/** Window counters by `<base>\0<windowMs>\0<window index>`, each kept while a read may look at it. */
export type WindowCounters = ExpiringMap<{ count: number }>;

/** What counting a request of `cost` (0: only looking) found: each window's state and retry, and the outcome. */
export interface Counted {
  outcome: "ok" | "rate_limited" | "cost_exceeds_limit";
  states: RateLimitState[];
  /** Per window: 0 did not deny, -1 never fits, else ms until the request fits. */
  retries: number[];
}

/**
 * Counts `cost` (0: only looks) in every window under `base`, all or none. `stagger` offsets
 * the fixed windows (the subject's offset, 0 for none).
 */
export function countWindows(counters: WindowCounters, base: string, windows: readonly Window[], now: number, stagger: number, cost: number): Counted {
  let outcome: Counted["outcome"] = "ok";
  const keys: string[] = [];
  const deadAts: number[] = [];
  const states: RateLimitState[] = [];
  const retries: number[] = [];
  for (const w of windows) {
    const W = w.windowMs;
    const sliding = w.algorithm === "sliding";
    const offset = sliding ? 0 : stagger % W;
    const window = Math.floor((now - offset) / W);
    const elapsed = now - offset - window * W;
    const key = `${base}\0${W}\0${window}`;
    const current = counters.get(key, now)?.count ?? 0;
    const previous = sliding ? (counters.get(`${base}\0${W}\0${window - 1}`, now)?.count ?? 0) : 0;
    const used = sliding ? estimate(previous, current, elapsed, W) : current;
    let retry = 0;
    if (cost > w.limit) {
      retry = -1;
      outcome = "cost_exceeds_limit";
    } else if (cost > 0 && used + cost > w.limit) {
      retry = sliding ? slidingRetry(previous, current, elapsed, W, w.limit, cost) : W - elapsed;
      if (outcome === "ok") outcome = "rate_limited";
    }
    keys.push(key);
    // A sliding window's counter is read as the previous one during the next window.
    deadAts.push(offset + (window + (sliding ? 2 : 1)) * W);
    states.push({ limit: w.limit, remaining: w.limit - used, resetMs: W - elapsed, windowMs: W, algorithm: w.algorithm ?? "fixed" });
    retries.push(retry);
  }
  const counted = outcome === "ok" && cost > 0;
  for (let i = 0; i < states.length; i++) {
    const state = states[i]!;
    if (counted) {
      const counter = counters.get(keys[i]!, now);
      if (counter) counter.count += cost;
      else counters.set(keys[i]!, { count: cost }, deadAts[i]!, now);
    }
    state.remaining = Math.max(0, state.remaining - (counted ? cost : 0));
  }
  return { outcome, states, retries };
}

/** Forgets the windows under `base` that a read at `now` would look at: the next request starts afresh. */
export function resetWindows(counters: WindowCounters, base: string, windows: readonly Window[], now: number, stagger: number): void {
  for (const w of windows) {
    const offset = w.algorithm === "sliding" ? 0 : stagger % w.windowMs;
    const window = Math.floor((now - offset) / w.windowMs);
    counters.delete(`${base}\0${w.windowMs}\0${window}`);
    counters.delete(`${base}\0${w.windowMs}\0${window - 1}`);
  }
}

/** The most restrictive window's state and every window's, as limits.peek answers. */
export function limitState(counted: Counted): { rateLimit: RateLimitState; windows: RateLimitState[] } {
  return { rateLimit: counted.states[mostRestrictive(counted.states, counted.retries).index]!, windows: counted.states };
}

/** floor(previous x (1 - elapsed / W)) + current: the sliding estimate. */
function estimate(previous: number, current: number, elapsed: number, windowMs: number): number {
  return Math.floor((previous * (windowMs - elapsed)) / windowMs) + current;
}

/** Ms from elapsed until a sliding window holds `cost` more. */
function slidingRetry(previous: number, current: number, elapsed: number, windowMs: number, limit: number, cost: number): number {
  const firstFit = (prev: number, cur: number, from: number): number | null => {
    const room = limit - cur - cost;
    if (room < 0) return null;
    if (prev === 0) return from;
    let t = Math.max(from, Math.floor(windowMs - ((room + 1) * windowMs) / prev) + 1);
    while (t > from && estimate(prev, cur, t - 1, windowMs) + cost <= limit) t--;
    while (t < windowMs && estimate(prev, cur, t, windowMs) + cost > limit) t++;
    return t >= windowMs ? null : t;
  };
  const now = firstFit(previous, current, elapsed);
  if (now !== null) return now - elapsed;
  const next = firstFit(current, 0, 0);
  if (next !== null) return windowMs - elapsed + next;
  return 2 * windowMs - elapsed;
}

/** The counters' base of an account's windows on a surface. */
export function accountCounters(subject: string, surface: string): string {
  return `${subject}\0account\0${surface}`;
}

/** The counters' base of a policy's windows on a surface for a subject. */
export function policyCounters(subject: string, policy: string, surface: string): string {
  return `${subject}\0policy\0${policy}\0${surface}`;
}
