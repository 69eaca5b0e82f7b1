/**
 * Request windows in the reference model (docs/limits.md): each window of a surface is
 * counted, fixed or sliding, all or none, as the library counts them. A subject keeps one
 * slot per window length it was counted in: the count of the window it was last counted in,
 * and of the one before (a sliding window's estimate reads both). A slot holds no expired
 * window for long: the next count moves it on, and a policy subject's slots are dropped once
 * no read can reach them, so memory stays bounded by the subjects counted recently.
 */
import { InvalidInputError } from '../errors.ts';
import { checkedTable, mostRestrictive, type RateLimitState, type SurfaceWindows, type Window } from '../rules/windows.ts';
import type { ExpiringMap } from './expiring.ts';

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
  /**
   * A bucket's slot: `window` is then the ms and `count` the ticks (1/limit ms) of its
   * theoretical arrival time, and `previous` is 0. A fixed or sliding window reads it as none.
   */
  bucket?: true;
  /**
   * The places taken under a concurrency limit, by lease id, with when each ends: then
   * windowMs is -1 (no window has that length), `window` the next lease id, the counts 0.
   */
  leases?: Map<number, number>;
}

/** Policy subjects' slots by `<subject>\0<policy>\0<surface>`, kept while a read may look at them. */
export type WindowCounters = ExpiringMap<Slot[]>;

/** What counting a request of `cost` (0: only looking) found: each window's state and retry, and the outcome. */
export interface Counted {
  outcome: 'ok' | 'rate_limited' | 'cost_exceeds_limit' | 'concurrency';
  /** The lease of the place a request took under a concurrency limit; 0: none. */
  lease?: number;
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
  // The places slot has windowMs -1, which no window has.
  for (const slot of slots) if (slot.windowMs === windowMs) return slot.bucket ? undefined : slot;
  return undefined;
}

/** The bucket slot of a window length, if the slot of that length is a bucket's. */
function bucketSlotOf(slots: Slot[], windowMs: number): Slot | undefined {
  for (const slot of slots) if (slot.windowMs === windowMs) return slot.bucket ? slot : undefined;
  return undefined;
}

/** floor(a / b) and the rest, for whole a >= 0 and b >= 1 up to 2^53 (as lib/windows.lua). */
function divmod(a: number, b: number): [number, number] {
  let q = Math.floor(a / b);
  if (q * b > a) q--;
  else if ((q + 1) * b <= a) q++;
  return [q, a - q * b];
}

/** What a bucket asked for `cost` at `now` answers: outcome, retry, ticks owed before and after. */
interface BucketTake {
  outcome: Counted['outcome'];
  retry: number;
  debt: number;
  after: number;
}

/** A bucket as lib/windows.lua's windows_bucket counts it (docs/limits.md, "Token buckets"). */
function takeBucket(slot: Slot | undefined, w: Window, now: number, cost: number): BucketTake {
  const burst = w.burst ?? w.limit;
  const tau = burst * w.windowMs;
  const debt = slot !== undefined && slot.window >= now ? Math.min(tau, (slot.window - now) * w.limit + slot.count) : 0;
  if (cost > burst) return { outcome: 'cost_exceeds_limit', retry: -1, debt, after: debt };
  const after = debt + cost * w.windowMs;
  if (after > tau) {
    const [wait, short] = divmod(after - tau, w.limit);
    return { outcome: 'rate_limited', retry: short > 0 ? wait + 1 : wait, debt, after: debt };
  }
  return { outcome: 'ok', retry: 0, debt, after };
}

/** A bucket owing `owed` ticks: its state. */
function bucketState(w: Window, owed: number): RateLimitState {
  const burst = w.burst ?? w.limit;
  const [whole, part] = divmod(owed, w.limit);
  const [remaining] = divmod(burst * w.windowMs - owed, w.windowMs);
  return { limit: w.limit, remaining, resetMs: part > 0 ? whole + 1 : whole, windowMs: w.windowMs, algorithm: 'bucket', burst };
}

/** Stores what a bucket owes after taking (`owed` ticks at `now`) in its slot. */
function owe(slots: Slot[], w: Window, owed: number, now: number): void {
  const [whole, part] = divmod(owed, w.limit);
  const i = slots.findIndex((slot) => slot.windowMs === w.windowMs);
  const slot: Slot = { windowMs: w.windowMs, window: now + whole, count: part, previous: 0, bucket: true };
  if (i < 0) slots.push(slot);
  else slots[i] = slot;
}

/**
 * Counts `cost` (0: only looks) in every window, all or none, in `slots` (which it moves on
 * and adds to when it counts). `stagger` offsets the fixed windows (the subject's offset, 0
 * for none).
 */
export function countWindows(slots: Slot[], windows: readonly Window[], now: number, stagger: number, cost: number): Counted {
  // A concurrency limit is last (src/windows.ts): with every place taken the other windows
  // are only looked at, and the request is denied "concurrency" (lib/windows.lua).
  const last = windows[windows.length - 1];
  if (last?.algorithm === 'concurrency') return countLeased(slots, windows, last, now, stagger, cost);
  return countRates(slots, windows, now, stagger, cost);
}

/** The slot of a subject's places taken, made on first use. */
function leaseSlot(slots: Slot[]): Slot {
  let slot = slots.find((s) => s.leases !== undefined);
  if (slot === undefined) {
    slot = { windowMs: -1, window: 0, count: 0, previous: 0, leases: new Map() };
    slots.push(slot);
  }
  return slot;
}

/** countWindows of a surface with a concurrency limit `inFlight`, last of `windows`. */
function countLeased(slots: Slot[], windows: readonly Window[], inFlight: Window, now: number, stagger: number, cost: number): Counted {
  const slot = leaseSlot(slots);
  const leases = slot.leases!;
  for (const [id, ends] of leases) if (ends <= now) leases.delete(id);
  const full = cost > 0 && leases.size >= inFlight.limit;
  const others = windows.slice(0, -1);
  const counted = others.length > 0 ? countRates(slots, others, now, stagger, full ? 0 : cost) : { outcome: 'ok' as const, states: [], retries: [] };
  let outcome: Counted['outcome'] = counted.outcome;
  let retry = 0;
  let lease = 0;
  const earliestOf = () => (leases.size === 0 ? undefined : Math.min(...leases.values()));
  if (full) {
    outcome = 'concurrency';
    retry = earliestOf()! - now;
  } else if (outcome === 'ok' && cost > 0) {
    // The ms it is taken at, or one past the last id when that is later (lib/windows.lua).
    lease = Math.max(now, slot.window);
    slot.window = lease + 1;
    leases.set(lease, now + inFlight.windowMs);
  }
  const earliest = earliestOf();
  const state: RateLimitState = {
    limit: inFlight.limit,
    remaining: inFlight.limit - leases.size,
    resetMs: earliest === undefined ? 0 : earliest - now,
    windowMs: inFlight.windowMs,
    algorithm: 'concurrency',
  };
  return { outcome, states: [...counted.states, state], retries: [...counted.retries, retry], lease };
}

/** Frees a place taken; whether it was. */
export function releasePlace(slots: Slot[] | undefined, id: number, now: number): boolean {
  const leases = slots?.find((s) => s.leases !== undefined)?.leases;
  const ends = leases?.get(id);
  if (leases === undefined || ends === undefined || ends <= now) return false;
  leases.delete(id);
  return true;
}

/** countWindows of fixed, sliding and bucket windows. */
function countRates(slots: Slot[], windows: readonly Window[], now: number, stagger: number, cost: number): Counted {
  let outcome: Counted['outcome'] = 'ok';
  const n = windows.length;
  const states: RateLimitState[] = new Array(n);
  const retries: number[] = new Array(n);
  const indexes: number[] = new Array(n);
  const buckets: (BucketTake | undefined)[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const w = windows[i]!;
    const W = w.windowMs;
    if (w.algorithm === 'bucket') {
      const take = takeBucket(bucketSlotOf(slots, W), w, now, cost);
      if (!w.shadow && (take.outcome === 'cost_exceeds_limit' || (take.outcome === 'rate_limited' && outcome === 'ok'))) outcome = take.outcome;
      buckets[i] = take;
      retries[i] = take.retry;
      continue;
    }
    const sliding = w.algorithm === 'sliding';
    const offset = sliding || stagger === 0 ? 0 : stagger % W;
    const window = Math.floor((now - offset) / W);
    const elapsed = now - offset - window * W;
    const slot = slotOf(slots, W);
    const current = slot !== undefined && slot.window === window ? slot.count : 0;
    const previous = sliding ? previousCount(slot, window) : 0;
    const used = sliding ? estimate(previous, current, elapsed, W) : current;
    let retry = 0;
    // A shadow window's retry is reported, but it never decides (docs/limits.md, "Shadow windows").
    // Limit 0 (an override's ban) denies every request rate_limited.
    if (cost > w.limit && w.limit > 0) {
      retry = -1;
      if (!w.shadow) outcome = 'cost_exceeds_limit';
    } else if (cost > 0 && used + cost > w.limit) {
      retry = sliding ? slidingRetry(previous, current, elapsed, W, w.limit, cost) : W - elapsed;
      if (!w.shadow && outcome === 'ok') outcome = 'rate_limited';
    }
    indexes[i] = window;
    states[i] = { limit: w.limit, remaining: w.limit - used, resetMs: W - elapsed, windowMs: W, algorithm: w.algorithm ?? 'fixed' };
    if (w.shadow) states[i]!.shadow = true;
    retries[i] = retry;
  }
  const counted = outcome === 'ok' && cost > 0;
  for (let i = 0; i < n; i++) {
    const take = buckets[i];
    if (take !== undefined) {
      const owed = counted ? take.after : take.debt;
      states[i] = bucketState(windows[i]!, owed);
      if (windows[i]!.shadow) states[i]!.shadow = true;
      if (counted) owe(slots, windows[i]!, owed, now);
      continue;
    }
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
  if ((w.algorithm !== undefined && w.algorithm !== 'fixed') || w.shadow || cost > w.limit) return undefined;
  // (A concurrency limit's algorithm is "concurrency": never here.)
  const W = w.windowMs;
  const offset = stagger === 0 ? 0 : stagger % W;
  const window = Math.floor((now - offset) / W);
  const slot = slotOf(slots, W);
  const current = slot !== undefined && slot.window === window ? slot.count : 0;
  if (current + cost > w.limit) return undefined;
  if (slot !== undefined && slot.window === window) slot.count += cost;
  else add(slots, W, window, cost);
  return { limit: w.limit, remaining: w.limit - current - cost, resetMs: W - (now - offset - window * W), windowMs: W, algorithm: 'fixed' };
}

function add(slots: Slot[], windowMs: number, window: number, cost: number): void {
  const slot = slotOf(slots, windowMs);
  if (slot === undefined) {
    // A bucket's slot of this length (the plan changed the window's algorithm) counts as none.
    const i = slots.findIndex((s) => s.windowMs === windowMs);
    if (i >= 0) slots.splice(i, 1);
    slots.push({ windowMs, window, count: cost, previous: 0 });
  } else if (slot.window === window) slot.count += cost;
  else {
    slot.previous = slot.window === window - 1 ? slot.count : 0;
    slot.count = cost;
    slot.window = window;
  }
}

/** Forgets the windows a read at `now` would look at: the next request starts every window afresh. */
export function resetWindows(slots: Slot[], windows: readonly Window[], now: number, stagger: number): void {
  for (const w of windows) {
    if (w.algorithm === 'concurrency') {
      // A reset frees every place, as lib/windows.lua's windows_forget drops them.
      const i = slots.findIndex((slot) => slot.leases !== undefined);
      if (i >= 0) slots.splice(i, 1);
      continue;
    }
    if (w.algorithm === 'bucket') {
      const i = slots.findIndex((slot) => slot.windowMs === w.windowMs && slot.bucket);
      if (i >= 0) slots.splice(i, 1);
      continue;
    }
    const slot = slotOf(slots, w.windowMs);
    if (!slot) continue;
    const offset = w.algorithm === 'sliding' ? 0 : stagger % w.windowMs;
    const window = Math.floor((now - offset) / w.windowMs);
    if (slot.window === window || slot.window === window - 1) Object.assign(slot, { window, count: 0, previous: 0 });
  }
}

/** From when no read looks at these slots any more: two windows after the latest one counted. */
export function slotsDeadAt(slots: Slot[]): number {
  let at = 0;
  for (const slot of slots)
    at = Math.max(at, slot.leases ? Math.max(0, ...slot.leases.values()) : slot.bucket ? slot.window + 1 : (slot.window + 3) * slot.windowMs);
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

/** The account's windows on a surface; a surface its plan lacks is bad input. */
export function surfaceWindows(limits: SurfaceWindows, subject: string, surface: string): readonly Window[] {
  const windows = checkedTable(limits)[surface];
  if (!windows) throw new InvalidInputError(`Surface "${surface}" is not one of the surfaces of "${subject}"'s plan`);
  return windows;
}
