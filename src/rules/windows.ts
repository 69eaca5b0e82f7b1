/**
 * Windows: how many requests a surface takes per window, fixed or sliding.
 * Validated once at start-up, then carried to the scripts as a spec string that
 * as the scripts read: '<limit>/<seconds>' with 's' appended for a sliding window,
 * windows separated by spaces ('30/60', '10/1 300/60s').
 */
import { InvalidInputError } from "../errors.ts";
import { count } from "./validate.ts";

/** fixed: clock-aligned windows that reset all at once; sliding: the two-window estimate. */
export type Algorithm = "fixed" | "sliding";

/** One rate-limit window of a surface: `limit` requests per `windowMs`. */
export interface Window {
  /** Requests (or cost units) the window takes. */
  limit: number;
  /** Whole seconds, 1 s to 31 days. */
  windowMs: number;
  /** Default "fixed": clock-aligned windows. "sliding": the two-window estimate. */
  algorithm?: Algorithm;
}

/** The windows of each surface, by the host's surface names. */
export type SurfaceWindows = Readonly<Record<string, readonly Window[]>>;

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
  /** fixed or sliding. */
  algorithm: Algorithm;
}

const SURFACE = /^[a-z0-9_-]{1,32}$/;
const MAX_WINDOW_MS = 31 * 86_400_000;
const MAX_WINDOWS = 4;
export const MAX_LIMIT = 1_000_000_000;

/** A surface name: 1-32 of a-z 0-9 _ - (the host's own names). */
export function surfaceName(what: string, value: unknown): string {
  if (typeof value !== "string" || !SURFACE.test(value)) {
    throw new InvalidInputError(`${what} must be 1-32 characters of a-z 0-9 _ - (got ${JSON.stringify(value)})`);
  }
  return value;
}

/** Checks 1..4 windows of one surface; at names where they come from in messages. */
function validateWindows(at: string, value: unknown): Window[] {
  if (!Array.isArray(value) || value.length < 1 || value.length > MAX_WINDOWS) {
    throw new InvalidInputError(`${at} must be a list of 1 to ${MAX_WINDOWS} windows`);
  }
  const seen = new Set<number>();
  return value.map((raw: unknown, i) => {
    const w = (raw ?? {}) as Partial<Window>;
    const where = `${at}[${i}]`;
    const limit = count(`${where}.limit`, w.limit, 1, MAX_LIMIT);
    const windowMs = count(`${where}.windowMs`, w.windowMs, 1000, MAX_WINDOW_MS);
    if (windowMs % 1000 !== 0) throw new InvalidInputError(`${where}.windowMs must be whole seconds (got ${windowMs})`);
    const algorithm = w.algorithm ?? "fixed";
    if (algorithm !== "fixed" && algorithm !== "sliding") {
      throw new InvalidInputError(`${where}.algorithm must be "fixed" or "sliding" (got ${JSON.stringify(algorithm)})`);
    }
    if (seen.has(windowMs)) throw new InvalidInputError(`${at}: two windows of one surface need different windowMs (${windowMs} twice)`);
    seen.add(windowMs);
    return { limit, windowMs, algorithm };
  });
}

/** Checks a { surface: windows } table (a plan's limits or a policy). */
export function validateSurfaceWindows(at: string, value: unknown): SurfaceWindows {
  if (typeof value !== "object" || value === null || Array.isArray(value) || Object.keys(value).length === 0) {
    throw new InvalidInputError(`${at} must name at least one surface with its windows`);
  }
  const out: Record<string, Window[]> = {};
  for (const [surface, windows] of Object.entries(value)) {
    surfaceName(`${at}: surface name`, surface);
    out[surface] = validateWindows(`${at}.${surface}`, windows);
  }
  return Object.freeze(out);
}

/** The spec string of a surface's windows, as the scripts read it. */
export function windowsSpec(windows: readonly Window[]): string {
  return windows.map((w) => `${w.limit}/${w.windowMs / 1000}${w.algorithm === "sliding" ? "s" : ""}`).join(" ");
}

/** The windows of a spec string (the account's stored copy of its plan). */
export function windowsFromSpec(spec: string): Window[] {
  return spec.split(" ").map((part) => {
    const m = /^(\d+)\/(\d+)(s?)$/.exec(part);
    if (!m) throw new Error(`Stored windows spec is unreadable: ${JSON.stringify(spec)}`);
    return { limit: Number(m[1]), windowMs: Number(m[2]) * 1000, algorithm: m[3] === "s" ? "sliding" : "fixed" };
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
  if (windows.length === 1) return { index: 0, retryAfterMs: retries[0]! > 0 ? retries[0]! : null };
  let index = 0;
  const denying = retries.map((r, i) => [r, i] as const).filter(([r]) => r !== 0);
  if (denying.length === 0) {
    windows.forEach((w, i) => {
      if (w.remaining < windows[index]!.remaining) index = i;
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
