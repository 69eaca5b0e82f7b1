/**
 * Request windows in the reference model (docs/limits.md): each window of a surface is
 * counted, fixed or sliding, all or none, as the library counts them. A subject keeps one
 * slot per window length it was counted in: the count of the window it was last counted in,
 * and of the one before (a sliding window's estimate reads both). A slot holds no expired
 * window for long: the next count moves it on, and a policy subject's slots are dropped once
 * no read can reach them, so memory stays bounded by the subjects counted recently.
 */
import { mostRestrictive, type RateLimitState, type Window } from "../rules/windows.ts";
import type { ExpiringMap } from "./expiring.ts";

/** The counts of one window length: `count` in window number `window`, `previous` in the one before. */
export interface Slot {
  /** The window length these counts are of. */
  windowMs: number;
  /** The number of the window last counted in (time / windowMs, after the subject's offset). */
  window: number;
  /** Requests counted in that window. */
  count: number;
  /** Requests counted in the window before it. */
  previous: number;
}

/** Policy subjects' slots by `<subject>\0<policy>\0<surface>`, kept while a read may look at them. */
export type WindowCounters = ExpiringMap<Slot[]>;

/** What counting a request of `cost` (0: only looking) found: each window's state and retry, and the outcome. */
export interface Counted {
  outcome: "ok" | "rate_limited" | "cost_exceeds_limit";
  states: RateLimitState[];
  /** Per window: 0 did not deny, -1 never fits, else ms until the request fits. */
  retries: number[];
}

/** The count of the window before `window`, as the slot holds it. */
function previousCount(slot: Slot | undefined, window: number): number {
  if (slot === undefined) return 0;
  return slot.window === window ? slot.previous : slot.window === window - 1 ? slot.count : 0;
}

function slotOf(slots: Slot[], windowMs: number): Slot | undefined {
  for (const slot of slots) if (slot.windowMs === windowMs) return slot;
  return undefined;
}

/**
 * Counts `cost` (0: only looks) in every window, all or none, in `slots` (which it moves on
 * and adds to when it counts). `stagger` offsets the fixed windows (the subject's offset, 0
 * for none).
 */
export function countWindows(slots: Slot[], windows: readonly Window[], now: number, stagger: number, cost: number): Counted {
  let outcome: Counted["outcome"] = "ok";
  const n = windows.length;
  const states: RateLimitState[] = new Array(n);
  const retries: number[] = new Array(n);
  const indexes: number[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const w = windows[i]!;
    const W = w.windowMs;
    const sliding = w.algorithm === "sliding";
    const offset = sliding || stagger === 0 ? 0 : stagger % W;
    const window = Math.floor((now - offset) / W);
    const elapsed = now - offset - window * W;
    const slot = slotOf(slots, W);
    const current = slot !== undefined && slot.window === window ? slot.count : 0;
    const previous = sliding ? previousCount(slot, window) : 0;
    const used = sliding ? estimate(previous, current, elapsed, W) : current;
    let retry = 0;
    if (cost > w.limit) {
      retry = -1;
      outcome = "cost_exceeds_limit";
    } else if (cost > 0 && used + cost > w.limit) {
      retry = sliding ? slidingRetry(previous, current, elapsed, W, w.limit, cost) : W - elapsed;
      if (outcome === "ok") outcome = "rate_limited";
    }
    indexes[i] = window;
    states[i] = { limit: w.limit, remaining: w.limit - used, resetMs: W - elapsed, windowMs: W, algorithm: w.algorithm ?? "fixed" };
    retries[i] = retry;
  }
  const counted = outcome === "ok" && cost > 0;
  for (let i = 0; i < n; i++) {
    const state = states[i]!;
    state.remaining = counted ? Math.max(0, state.remaining - cost) : Math.max(0, state.remaining);
    if (counted) add(slots, windows[i]!.windowMs, indexes[i]!, cost);
  }
  return { outcome, states, retries };
}

/**
 * Counts `cost` in a surface's one fixed window when it fits and returns the window's state;
 * undefined when it does not fit or the window slides (countWindows answers those).
 */
export function admitOne(slots: Slot[], w: Window, now: number, stagger: number, cost: number): RateLimitState | undefined {
  if (w.algorithm === "sliding" || cost > w.limit) return undefined;
  const W = w.windowMs;
  const offset = stagger === 0 ? 0 : stagger % W;
  const window = Math.floor((now - offset) / W);
  const slot = slotOf(slots, W);
  const current = slot !== undefined && slot.window === window ? slot.count : 0;
  if (current + cost > w.limit) return undefined;
  if (slot !== undefined && slot.window === window) slot.count += cost;
  else add(slots, W, window, cost);
  return { limit: w.limit, remaining: w.limit - current - cost, resetMs: W - (now - offset - window * W), windowMs: W, algorithm: "fixed" };
}

function add(slots: Slot[], windowMs: number, window: number, cost: number): void {
  const slot = slotOf(slots, windowMs);
  if (slot === undefined) slots.push({ windowMs, window, count: cost, previous: 0 });
  else if (slot.window === window) slot.count += cost;
  else {
    slot.previous = slot.window === window - 1 ? slot.count : 0;
    slot.count = cost;
    slot.window = window;
  }
}

/** Forgets the windows a read at `now` would look at: the next request starts every window afresh. */
export function resetWindows(slots: Slot[], windows: readonly Window[], now: number, stagger: number): void {
  for (const w of windows) {
    const slot = slotOf(slots, w.windowMs);
    if (!slot) continue;
    const offset = w.algorithm === "sliding" ? 0 : stagger % w.windowMs;
    const window = Math.floor((now - offset) / w.windowMs);
    if (slot.window === window || slot.window === window - 1) Object.assign(slot, { window, count: 0, previous: 0 });
  }
}

/** From when no read looks at these slots any more: two windows after the latest one counted. */
export function slotsDeadAt(slots: Slot[]): number {
  let at = 0;
  for (const slot of slots) at = Math.max(at, (slot.window + 3) * slot.windowMs);
  return at;
}

/** The most restrictive window's state and every window's, as limits.peek answers. */
export function limitState(counted: Counted): { rateLimit: RateLimitState; windows: RateLimitState[] } {
  return { rateLimit: counted.states[mostRestrictive(counted.states, counted.retries).index]!, windows: counted.states };
}

/** floor(previous x (1 - elapsed / W)) + current: the sliding estimate. */
function estimate(previous: number, current: number, elapsed: number, windowMs: number): number {
  return previous === 0 ? current : Math.floor((previous * (windowMs - elapsed)) / windowMs) + current;
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
