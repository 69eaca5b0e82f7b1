/**
 * Windows: how many requests a surface takes per window, fixed, sliding or a token bucket.
 * Validated once at start-up, then carried to the scripts as a spec string that
 * lua/lib/windows.lua reads: '<limit>/<seconds>' with 's' appended for a sliding window
 * and 'b<burst>' for a bucket, windows separated by spaces ('30/60', '10/1 300/60s', '5/1b20').
 */
import { InvalidInputError } from '../errors.ts';
import { count } from './validate.ts';

/**
 * fixed: clock-aligned windows that reset all at once; sliding: the two-window estimate;
 * bucket: a token bucket (GCRA) refilling `limit` per `windowMs` evenly, holding `burst`.
 */
export type Algorithm = 'fixed' | 'sliding' | 'bucket' | 'concurrency';

/** One rate-limit window of a surface: `limit` requests per `windowMs`. */
export interface Window {
  /** Requests (or cost units) the window takes. */
  limit: number;
  /** Whole seconds, 1 s to 31 days. */
  windowMs: number;
  /**
   * Default "fixed": clock-aligned windows. "sliding": the two-window estimate. "bucket": a
   * token bucket that refills `limit` tokens per `windowMs` evenly (docs/limits.md).
   */
  algorithm?: Algorithm;
  /** A bucket's most tokens (default `limit`): how many requests may come at once. Buckets only. */
  burst?: number;
  /** A limit in flight's lease (its windowMs is the same): checked tables only. */
  leaseMs?: number;
  /**
   * Counts as usual but never denies: a request it would have denied is admitted and listed in
   * the admission's `shadowDenials` (a dry run of a new limit, docs/limits.md).
   */
  shadow?: boolean;
}

/** A limit on requests in flight: `limit` at once, each place freed by release or after `leaseMs`. */
export interface ConcurrencyWindow {
  /** "concurrency". */
  algorithm: 'concurrency';
  /** Requests in flight at once. */
  limit: number;
  /** A place nobody releases frees itself this long after it was taken. */
  leaseMs: number;
}

/** The windows of each surface, by the host's surface names. */
export type SurfaceWindows = Readonly<Record<string, readonly (Window | ConcurrencyWindow)[]>>;

/**
 * The windows of a checked table (validatePlans, validatePolicies, validateWindows), where
 * every concurrency limit is a Window with windowMs = leaseMs.
 */
export function checkedWindows(windows: readonly (Window | ConcurrencyWindow)[]): readonly Window[] {
  return windows as readonly Window[];
}

/** A checked table's surfaces and windows (see checkedWindows). */
export function checkedTable(table: SurfaceWindows): Readonly<Record<string, readonly Window[]>> {
  return table as Readonly<Record<string, readonly Window[]>>;
}

/** The state of one window after a call (what the rate-limit headers show). */
export interface RateLimitState {
  /** Requests (or cost units) the window takes. */
  limit: number;
  /** Left after this request (after nothing when it was denied); never negative. */
  remaining: number;
  /** Ms until the window resets (a sliding window: the end of its current window). */
  resetMs: number;
  /** The window's length in ms. */
  windowMs: number;
  /** fixed, sliding or bucket. */
  algorithm: Algorithm;
  /** A bucket's most tokens; `remaining` counts whole tokens up to it. Buckets only. */
  burst?: number;
  /** A shadow window: it counts but never denies, and the headers never show it. */
  shadow?: true;
  /** A window of the API key's own limits (keys.issue `limits`), not of its subject's. */
  key?: true;
}

const SURFACE = /^[a-z0-9_-]{1,32}$/;
const MAX_WINDOW_MS = 31 * 86_400_000;
export const MAX_WINDOWS = 4;
export const MAX_LIMIT = 1_000_000_000;

/** A surface name: 1-32 of a-z 0-9 _ - (the host's own names). */
export function surfaceName(what: string, value: unknown): string {
  if (typeof value !== 'string' || !SURFACE.test(value)) {
    throw new InvalidInputError(`${what} must be 1-32 characters of a-z 0-9 _ - (got ${JSON.stringify(value)})`);
  }
  return value;
}

/**
 * Checks 1..4 windows of one surface; at names where they come from in messages. minLimit 0
 * lets a fixed or sliding window take nothing (an override's ban).
 */
export function validateWindows(at: string, value: unknown, minLimit = 1): Window[] {
  if (!Array.isArray(value) || value.length < 1 || value.length > MAX_WINDOWS) {
    throw new InvalidInputError(`${at} must be a list of 1 to ${MAX_WINDOWS} windows`);
  }
  const seen = new Set<number>();
  const checked = value.map((raw: unknown, i) => {
    const w = (raw ?? {}) as Partial<Window>;
    const where = `${at}[${i}]`;
    if (w.algorithm === 'concurrency') return concurrencyWindow(where, raw);
    const limit = count(`${where}.limit`, w.limit, w.algorithm === 'bucket' ? 1 : minLimit, MAX_LIMIT);
    const windowMs = count(`${where}.windowMs`, w.windowMs, 1000, MAX_WINDOW_MS);
    if (windowMs % 1000 !== 0) throw new InvalidInputError(`${where}.windowMs must be whole seconds (got ${windowMs})`);
    const algorithm = w.algorithm ?? 'fixed';
    if (algorithm !== 'fixed' && algorithm !== 'sliding' && algorithm !== 'bucket') {
      throw new InvalidInputError(`${where}.algorithm must be "fixed", "sliding" or "bucket" (got ${JSON.stringify(algorithm)})`);
    }
    if (seen.has(windowMs)) throw new InvalidInputError(`${at}: two windows of one surface need different windowMs (${windowMs} twice)`);
    seen.add(windowMs);
    if (w.shadow !== undefined && typeof w.shadow !== 'boolean')
      throw new InvalidInputError(`${where}.shadow must be true or false (got ${JSON.stringify(w.shadow)})`);
    const shadow = w.shadow === true ? { shadow: true } : {};
    if (algorithm !== 'bucket') {
      if (w.burst !== undefined) throw new InvalidInputError(`${where}.burst is for buckets only (algorithm: "bucket")`);
      return { limit, windowMs, algorithm, ...shadow };
    }
    const burst = count(`${where}.burst`, w.burst ?? limit, 1, MAX_LIMIT);
    // The scripts count a bucket in ticks of 1/limit ms: what it may owe, burst x windowMs
    // ticks, stays a whole number a double holds exactly.
    if (burst * windowMs > Number.MAX_SAFE_INTEGER) {
      throw new InvalidInputError(`${where}: burst x windowMs must be at most 2^53 - 1 (got ${burst} x ${windowMs})`);
    }
    return { limit, windowMs, algorithm, burst, ...shadow };
  });
  const inFlight = checked.filter((w) => w.algorithm === 'concurrency');
  if (inFlight.length > 1) throw new InvalidInputError(`${at}: a surface has at most one concurrency limit`);
  // The limit in flight goes last: lib/windows.lua finds it at the end of the spec.
  return [...checked.filter((w) => w.algorithm !== 'concurrency'), ...inFlight];
}

/** A checked `{ algorithm: "concurrency", limit, leaseMs }`, kept with windowMs = leaseMs. */
function concurrencyWindow(where: string, raw: unknown): Window {
  const w = raw as Partial<ConcurrencyWindow> & { shadow?: unknown; burst?: unknown };
  if (w.shadow !== undefined || w.burst !== undefined) throw new InvalidInputError(`${where}: a concurrency limit takes only limit and leaseMs`);
  const limit = count(`${where}.limit`, w.limit, 1, MAX_LIMIT);
  const leaseMs = count(`${where}.leaseMs`, w.leaseMs, 1, MAX_WINDOW_MS);
  return { algorithm: 'concurrency', limit, windowMs: leaseMs, leaseMs };
}

/** Checks a { surface: windows } table (a plan's limits or a policy). */
export function validateSurfaceWindows(at: string, value: unknown): SurfaceWindows {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length === 0) {
    throw new InvalidInputError(`${at} must name at least one surface with its windows`);
  }
  const out: Record<string, Window[]> = {};
  for (const [surface, windows] of Object.entries(value)) {
    surfaceName(`${at}: surface name`, surface);
    out[surface] = validateWindows(`${at}.${surface}`, windows);
  }
  return Object.freeze(out);
}

/** The spec string of a surface's windows, as lua/lib/windows.lua reads it. */
export function windowsSpec(windows: readonly Window[]): string {
  return windows
    .map((w) =>
      w.algorithm === 'concurrency'
        ? `${w.limit}c${w.windowMs}`
        : `${w.limit}/${w.windowMs / 1000}${w.algorithm === 'sliding' ? 's' : w.algorithm === 'bucket' ? `b${w.burst ?? w.limit}` : ''}${w.shadow ? '!' : ''}`,
    )
    .join(' ');
}

/** The windows of a spec string (the account's stored copy of its plan). */
export function windowsFromSpec(spec: string): Window[] {
  return spec.split(' ').map((part) => {
    const lease = /^(\d+)c(\d+)$/.exec(part);
    if (lease) return { algorithm: 'concurrency', limit: Number(lease[1]), windowMs: Number(lease[2]), leaseMs: Number(lease[2]) } as Window;
    const m = /^(\d+)\/(\d+)(?:(s)|b(\d+))?(!?)$/.exec(part);
    if (!m) throw new Error(`Stored windows spec is unreadable: ${JSON.stringify(spec)}`);
    const window: Window = { limit: Number(m[1]), windowMs: Number(m[2]) * 1000, algorithm: m[3] === 's' ? 'sliding' : m[4] ? 'bucket' : 'fixed' };
    if (m[4]) window.burst = Number(m[4]);
    if (m[5]) window.shadow = true;
    return window;
  });
}

/**
 * The subject's offset of fixed windows with `stagger` on: a 32-bit FNV-1a hash of its id.
 * Each window uses offset % windowMs, so subjects do not all reset in the same second.
 */
export function staggerOf(subject: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < subject.length; i++) {
    hash ^= subject.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/**
 * The window the headers show: allowed, the one with the
 * fewest remaining; denied, the denying window with the latest retry.
 */
export function mostRestrictive(windows: readonly RateLimitState[], retries: readonly number[]): { index: number; retryAfterMs: number | null } {
  if (windows.length === 1) return { index: 0, retryAfterMs: retries[0]! > 0 && !windows[0]!.shadow ? retries[0]! : null };
  // Shadow windows never deny and the headers never show them, unless every window is one.
  const shown = windows.some((w) => !w.shadow) ? (i: number) => !windows[i]!.shadow : () => true;
  let index = windows.findIndex((_, i) => shown(i));
  const denying = retries.map((r, i) => [r, i] as const).filter(([r, i]) => r !== 0 && !windows[i]!.shadow);
  if (denying.length === 0) {
    windows.forEach((w, i) => {
      if (shown(i) && w.remaining < windows[index]!.remaining) index = i;
    });
    return { index, retryAfterMs: null };
  }
  if (denying.some(([r]) => r < 0)) {
    const [, never] = denying.find(([r]) => r < 0)!;
    return { index: never, retryAfterMs: null };
  }
  let latest = denying[0]!;
  for (const d of denying) if (d[0] > latest[0]) latest = d;
  return { index: latest[1], retryAfterMs: latest[0] };
}

/** The shadow windows that would have denied a request (a nonzero retry), in the plan's order. */
export function shadowDenialsOf(windows: readonly RateLimitState[], retries: readonly number[]): RateLimitState[] | undefined {
  let denials: RateLimitState[] | undefined;
  for (let i = 0; i < windows.length; i++) {
    if (windows[i]!.shadow && retries[i] !== 0) (denials ??= []).push(windows[i]!);
  }
  return denials;
}
