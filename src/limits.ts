/**
 * Request limits (SPEC §4, §10): every window of a surface is checked and counted in one
 * script, in one round trip with the credit pre-check of a charged endpoint. A subject with
 * an account takes its plan's windows; a subject without one takes a policy's. A denied
 * request is a value and counts in no window. Scripts: lua/admit.lua, lua/resetLimits.lua.
 */
import type { Context } from "./context.ts";
import { InvalidInputError } from "./errors.ts";
import type { SubjectKeys } from "./redisKeys.ts";
import { admit as admitScript, resetLimits } from "./scripts/bundle.generated.ts";
import { Code } from "./scripts/codes.ts";
import { count } from "./validate.ts";
import { mostRestrictive, surfaceName, windowRetries, windowsSpec, windowStates, type RateLimitState } from "./windows.ts";

export type { RateLimitState };

export interface Allowed {
  allowed: true;
  /** The most restrictive window (fewest remaining): what the headers show. */
  rateLimit: RateLimitState;
  /** Every window of the surface, in the plan's order. */
  windows: RateLimitState[];
  /** Present when a credit pre-check was asked: sufficient, or the counts for a 402. */
  credits?: { sufficient: boolean; balance: number; needed: number };
}

export interface Denial {
  allowed: false;
  /** rate_limited: a window is full; cost_exceeds_limit: the cost is above a window's limit. */
  reason: "rate_limited" | "cost_exceeds_limit";
  /** The denying window with the latest retry. */
  rateLimit: RateLimitState;
  windows: RateLimitState[];
  /** When the request would fit; null when it never can (cost_exceeds_limit). */
  retryAfterMs: number | null;
}

export type Admission = Allowed | Denial;

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

export interface LimitTarget {
  surface?: string;
  policy?: string;
}

/** The state of a surface's windows, read without counting. */
export interface LimitState {
  rateLimit: RateLimitState;
  windows: RateLimitState[];
}

/** What admit.lua needs to know of the subject's windows: a policy's spec, or '' for the account's. */
export interface WindowTarget {
  surface: string;
  windows: string;
  counterBase: string;
  stagger: number;
  cacheKey: string | undefined;
}

/** Decodes admit.lua's reply (lib/windows.lua layout from index 2). */
export function admissionFrom(reply: unknown[], credits: number): Admission {
  const code = reply[0] as number;
  const windows = windowStates(reply, 2);
  const { index, retryAfterMs } = mostRestrictive(windows, windowRetries(reply, 2));
  const rateLimit = windows[index]!;
  if (code === Code.RATE_LIMITED || code === Code.COST_EXCEEDS_LIMIT) {
    return { allowed: false, reason: code === Code.RATE_LIMITED ? "rate_limited" : "cost_exceeds_limit", rateLimit, windows, retryAfterMs };
  }
  if (credits === 0) return { allowed: true, rateLimit, windows };
  return { allowed: true, rateLimit, windows, credits: { sufficient: code === Code.OK, balance: Number(reply[1]), needed: credits } };
}

export class Limits {
  constructor(private readonly ctx: Context) {}

  /** Counts a request of `cost` in every window of the surface; a denial counts nothing. */
  async admit(subject: string, options: AdmitOptions = {}): Promise<Admission> {
    const keys = this.ctx.keys(subject);
    const target = this.target(keys, options);
    const cost = count("cost", options.cost ?? 1, 1);
    const credits = count("Credits to pre-check", options.credits ?? 0);
    if (credits > 0 && options.policy !== undefined) throw new InvalidInputError("A credit pre-check needs an account: a policy subject has no credits");
    const cache = this.ctx.denyCache;
    if (cache && target.cacheKey) {
      const cached = cache.get(target.cacheKey);
      if (cached) return cached;
    }
    const reply = await this.ctx.runner.run(admitScript, keys, { ...target, cost, credits, keyId: "", keyDigest: "" });
    const admission = admissionFrom(reply, credits);
    if (!admission.allowed && cache && target.cacheKey) cache.remember(target.cacheKey, keys.subject, admission, cost);
    return admission;
  }

  /**
   * The denial this process's deny cache holds for a policy subject on the surface, read from
   * memory only (no Redis call); undefined when there is none or the cache is off. Lets a host
   * refuse a blocked caller before doing any work for it.
   */
  denied(subject: string, options: LimitTarget & { policy: string }): Denial | undefined {
    const cache = this.ctx.denyCache;
    if (!cache) return undefined;
    const target = this.target(this.ctx.keys(subject), options);
    return target.cacheKey ? cache.get(target.cacheKey) : undefined;
  }

  /** The surface's windows as they stand, counting nothing. */
  async peek(subject: string, options: LimitTarget = {}): Promise<LimitState> {
    const keys = this.ctx.keys(subject);
    const reply = await this.ctx.runner.run(admitScript, keys, { ...this.target(keys, options), cost: 0, credits: 0, keyId: "", keyDigest: "" });
    const { rateLimit, windows } = admissionFrom(reply, 0);
    return { rateLimit, windows };
  }

  /** Clears the subject's counts on the surface: its next request starts every window afresh. */
  async reset(subject: string, options: LimitTarget = {}): Promise<void> {
    const keys = this.ctx.keys(subject);
    const { surface, windows, counterBase, stagger } = this.target(keys, options);
    await this.ctx.runner.run(resetLimits, keys, { surface, windows, counterBase, stagger });
    this.ctx.denyCache?.forget(keys.subject);
  }

  /** The surface's windows: a policy's (checked here), or the account's ('' lets the script read them). */
  target(keys: SubjectKeys, options: LimitTarget): WindowTarget {
    const stagger = this.ctx.staggerOf(keys.subject);
    if (options.policy === undefined) {
      return { surface: this.ctx.accountSurface(options.surface ?? "api"), windows: "", counterBase: keys.counterBase, stagger, cacheKey: undefined };
    }
    const surface = surfaceName("Surface", options.surface ?? "api");
    const policy = options.policy;
    if (typeof policy !== "string" || !Object.hasOwn(this.ctx.policies, policy)) {
      throw new InvalidInputError(`Unknown policy ${JSON.stringify(policy)}; known policies: ${Object.keys(this.ctx.policies).join(", ") || "none"}`);
    }
    const windows = this.ctx.policies[policy]![surface];
    if (windows === undefined) {
      throw new InvalidInputError(`Policy "${policy}" has no surface "${surface}" (it has ${Object.keys(this.ctx.policies[policy]!).join(", ")})`);
    }
    return { surface, windows: windowsSpec(windows), counterBase: keys.policyCounterBase(policy), stagger, cacheKey: `p\0${policy}\0${surface}\0${keys.subject}` };
  }
}
