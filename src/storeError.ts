/**
 * What the rate-limit middlewares do when the quota store cannot be reached (their
 * `onStoreError`, docs/reliability.md "When Redis is down"):
 * - "closed" (the default): 503 unavailable;
 * - "open": the request passes, uncounted;
 * - "local": this process counts it, in fixed windows of its own memory, against the windows
 *   last seen for the subject on the surface (one not seen yet: the most restrictive any plan,
 *   or the policy, gives the surface), each limit divided by `instances`.
 * The store is asked first on every request, so the middleware is back on it as soon as it
 * answers. Neither open nor local can verify a key: the pass carries the subject the key
 * names, unverified, and `degraded`. A request that pre-checks credits always fails closed.
 */
import { InvalidInputError } from "./errors.ts";
import { rateLimitedReply, rateLimitHeaders, unavailableReply } from "./http.ts";
import type { Admission } from "./limits.ts";
import type { RateLimitDecision, RateLimitOptions } from "./middleware.ts";
import type { Tollgate } from "./tollgate.ts";
import { count } from "./validate.ts";
import type { RateLimitState, Window } from "./windows.ts";

/** What a rate-limit middleware does when the quota store cannot be reached. */
export type StoreErrorMode = "closed" | "open" | "local";

/** The request that met the store failure, as checkRequest read it. */
export interface FailedCall {
  /** The API key, or the subject the host named. */
  given: string;
  surface: string;
  cost: number;
  credits: number;
  requestId: () => string;
}

/** Entries (subjects' windows, and counters) each local limiter keeps at most. */
const MAX_ENTRIES = 10_000;

const limiters = new WeakMap<object, LocalLimiter>();

/** Checks `onStoreError` and `instances`; with "local", makes the middleware's limiter. */
export function storeErrorMode(options: RateLimitOptions<never>): StoreErrorMode {
  const mode = options.onStoreError ?? "closed";
  if (mode !== "closed" && mode !== "open" && mode !== "local") throw new InvalidInputError(`rateLimit: onStoreError ${JSON.stringify(mode)} is not "closed", "open" or "local"`);
  if (options.instances !== undefined && mode !== "local") throw new InvalidInputError('rateLimit: instances divides the limits of onStoreError "local"; it means nothing without it');
  if (mode === "local" && !limiters.has(options)) limiters.set(options, new LocalLimiter(options.tollgate, count("rateLimit: instances", options.instances ?? 1, 1, 10_000)));
  return mode;
}

/** With onStoreError "local", remembers the windows the store answered for the subject. */
export function rememberWindows(options: RateLimitOptions<never>, subject: string, surface: string, windows: readonly RateLimitState[]): void {
  limiterOf(options).remember(subject, surface, windows);
}

/** The decision for a request the store could not answer. */
export function whenStoreFails<Req>(options: RateLimitOptions<Req>, call: FailedCall, error: unknown): RateLimitDecision {
  const mode = options.onStoreError ?? "closed";
  // Credits cannot be looked for anywhere but the store.
  if (mode === "closed" || call.credits > 0) return { refusal: { reason: "unavailable", reply: unavailableReply(call.requestId()), error } };
  const { tollgate, policy } = options;
  const parsed = options.key ? tollgate.keys.parse(call.given) : { subject: call.given };
  // A malformed key never reaches the store: keys.verify refuses it first.
  if (parsed === null) return { refusal: { reason: "unavailable", reply: unavailableReply(call.requestId()), error } };
  const { subject } = parsed;
  const { surface } = call;
  const keyId = "keyId" in parsed ? { keyId: parsed.keyId } : {};
  if (mode === "open") {
    tollgate.countDegraded?.("open", surface, "passed");
    return { pass: { subject, ...keyId, surface, headers: {}, degraded: "open" } };
  }
  const admission = limiterOf(options).admit(subject, surface, call.cost, policy);
  if (admission === undefined) return { refusal: { reason: "unavailable", reply: unavailableReply(call.requestId()), error } };
  tollgate.countDegraded?.("local", surface, admission.allowed ? "passed" : "denied");
  const headerOptions = { ietf: options.ietfHeaders === true, policy: policy ?? surface };
  if (!admission.allowed) return { refusal: { reason: "rate_limited", reply: rateLimitedReply(admission, call.requestId(), headerOptions), subject, admission } };
  return { pass: { subject, ...keyId, surface, admission, headers: rateLimitHeaders(admission, headerOptions), degraded: "local" } };
}

/** The middleware's limiter, made on first use when checkRequest's options were never checked. */
function limiterOf(options: RateLimitOptions<never>): LocalLimiter {
  if (!limiters.has(options)) storeErrorMode(options);
  return limiters.get(options)!;
}

interface Counter {
  start: number;
  used: number;
}

/** Fixed windows in this process's memory, each limit divided by the number of instances. */
class LocalLimiter {
  private readonly seen = new Map<string, readonly Window[]>();
  private readonly counters = new Map<string, Counter>();

  constructor(
    private readonly tollgate: Tollgate,
    private readonly instances: number,
  ) {}

  remember(subject: string, surface: string, windows: readonly RateLimitState[]): void {
    // The latest answer wins: a plan change reaches the local limits too.
    const id = `${subject}\0${surface}`;
    this.seen.delete(id);
    bounded(this.seen).set(id, windows.map(({ limit, windowMs }) => ({ limit, windowMs })));
  }

  /** The admission of this process's counters; undefined when no window is known for the surface. */
  admit(subject: string, surface: string, cost: number, policy: string | undefined, now = Date.now()): Admission | undefined {
    const windows = this.seen.get(`${subject}\0${surface}`) ?? this.fallback(surface, policy);
    if (windows.length === 0) return undefined;
    const states: RateLimitState[] = [];
    const retries: number[] = [];
    const counters = windows.map(({ limit, windowMs }) => {
      const id = `${subject}\0${surface}\0${windowMs}`;
      const start = now - (now % windowMs);
      let counter = this.counters.get(id);
      if (counter === undefined || counter.start !== start) bounded(this.counters).set(id, (counter = { start, used: 0 }));
      const local = Math.max(1, Math.floor(limit / this.instances));
      const fits = counter.used + cost <= local;
      retries.push(fits ? 0 : cost > local ? Infinity : start + windowMs - now);
      states.push({ limit: local, remaining: local - counter.used, resetMs: start + windowMs - now, windowMs, algorithm: "fixed" });
      return counter;
    });
    const denied = retries.some((ms) => ms > 0);
    if (!denied) counters.forEach((counter, i) => ((counter.used += cost), (states[i]!.remaining -= cost)));
    const worst = denied ? retries.indexOf(Math.max(...retries)) : states.reduce((best, s, i) => (s.remaining < states[best]!.remaining ? i : best), 0);
    const rateLimit = states[worst]!;
    if (!denied) return { allowed: true, rateLimit, windows: states };
    const never = retries[worst] === Infinity;
    return { allowed: false, reason: never ? "cost_exceeds_limit" : "rate_limited", rateLimit, windows: states, retryAfterMs: never ? null : retries[worst]! };
  }

  /** The windows of a subject not seen yet: the policy's, or the most restrictive plan's. */
  private fallback(surface: string, policy: string | undefined): readonly Window[] {
    if (policy !== undefined) return this.tollgate.policies[policy]?.[surface] ?? [];
    const perSecond = (windows: readonly Window[]) => Math.min(...windows.map((w) => w.limit / w.windowMs));
    const candidates = Object.values(this.tollgate.plans).flatMap((plan) => (plan.limits[surface] ? [plan.limits[surface]] : []));
    return candidates.reduce((least, windows) => (perSecond(windows) < perSecond(least) ? windows : least), candidates[0] ?? []);
  }
}

/** The map with room for one more entry: past MAX_ENTRIES the oldest goes. */
function bounded<V>(map: Map<string, V>): Map<string, V> {
  if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value!);
  return map;
}
