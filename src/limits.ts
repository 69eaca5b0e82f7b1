/**
 * Request limits: every window of a surface is checked and counted in one
 * script, in one round trip with the credit pre-check of a charged endpoint. A subject with
 * an account takes its plan's windows; a subject without one takes a policy's. A denied
 * request is a value and counts in no window. Scripts: admit, resetLimits.
 */
import type { Context } from "./context.ts";
import type { SubjectKeys } from "./redisKeys.ts";
import { admitArgs, admitted, denied, policyWindows, type Admission, type AdmitOptions, type Denial, type LimitState, type LimitTarget } from "./rules/limits.ts";
import { mostRestrictive, surfaceName, windowsSpec, type RateLimitState } from "./rules/windows.ts";
import { admit as admitScript, admitPolicy, resetLimits } from "./scripts/bundle.generated.ts";
import { Code } from "./scripts/codes.ts";
import type { WindowsForm } from "./windows.ts";

export type { Admission, AdmitOptions, Allowed, Denial, LimitState, LimitTarget } from "./rules/limits.ts";
export type { RateLimitState };

/** A policy's windows on a surface for one subject, as lua/admitPolicy.lua takes them. */
interface PolicyTarget {
  surface: string;
  windows: string;
  counters: string;
  stagger: number;
  cacheKey: string;
}

/** What admit.lua, verifyKey.lua and admitPolicy.lua answer, decoded: the windows, and the balance of a pre-check. */
export interface AdmitReply {
  readonly code: Code;
  readonly windows: WindowsForm;
  readonly balance?: number | undefined;
}

/** The admission an admit reply stands for. */
export function admissionFrom(reply: AdmitReply, credits: number): Admission {
  const { code } = reply;
  const refused = code === Code.RATE_LIMITED || code === Code.COST_EXCEEDS_LIMIT;
  const { states: windows, retries } = reply.windows;
  const { index, retryAfterMs } = mostRestrictive(windows, retries);
  const rateLimit = windows[index]!;
  if (refused) {
    return denied(code === Code.RATE_LIMITED ? "rate_limited" : "cost_exceeds_limit", rateLimit, windows, retryAfterMs);
  }
  if (credits === 0) return admitted(rateLimit, windows);
  return admitted(rateLimit, windows, { sufficient: code === Code.OK, balance: reply.balance ?? 0, needed: credits });
}

/** Request limits (`tollgate.limits`): admit, peek and reset a subject's windows on a surface. */
export class Limits {
  /** Each policy's windows per surface, as spec strings, made once. */
  private readonly specs = new Map<string, string>();

  /** @internal Made by createTollgate. */
  constructor(private readonly ctx: Context) {}

  /**
   * Counts a request of `cost` in every window of the surface, in one round trip with the
   * credit pre-check when `credits` is given; a denial counts nothing. A subject with an
   * account takes its plan's windows (AccountNotFoundError without one); with `policy`, a
   * subject without an account takes the policy's.
   *
   * @example
   * ```ts
   * const admission = await tollgate.limits.admit("acct_42", { credits: 1 });
   * if (!admission.ok) return reply(rateLimitedReply(admission, requestId));
   * if (!admission.credits?.sufficient) return reply(insufficientReply(admission.credits!.balance, 1, requestId));
   * // Sign-in attempts per IP, by a policy of createTollgate's `policies`:
   * const attempt = await tollgate.limits.admit(`ip:${ip}`, { policy: "signin" });
   * ```
   */
  async admit(subject: string, options: AdmitOptions = {}): Promise<Admission> {
    const redisKeys = this.ctx.redisKeys(subject);
    const { cost, credits } = admitArgs(options);
    if (options.policy === undefined) {
      const surface = this.ctx.accountSurface(options.surface ?? "api");
      const reply = await this.ctx.runner.run(admitScript, redisKeys, { surface, cost, credits, stagger: this.ctx.staggerOf(redisKeys.subject) });
      return admissionFrom(reply, credits);
    }
    const target = this.policy(redisKeys, options.policy, options.surface);
    const cache = this.ctx.denyCache;
    const cached = cache?.get(target.cacheKey, cost);
    if (cached) return cached;
    const admission = admissionFrom(await this.ctx.runner.run(admitPolicy, redisKeys, { ...target, cost }), 0);
    if (!admission.ok) cache?.remember(target.cacheKey, redisKeys.subject, admission, cost);
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
    return cache.get(this.policy(this.ctx.redisKeys(subject), options.policy, options.surface).cacheKey);
  }

  /** The surface's windows as they stand, counting nothing. */
  async peek(subject: string, options: LimitTarget = {}): Promise<LimitState> {
    const redisKeys = this.ctx.redisKeys(subject);
    const reply =
      options.policy === undefined
        ? await this.ctx.runner.run(admitScript, redisKeys, { surface: this.ctx.accountSurface(options.surface ?? "api"), cost: 0, credits: 0, stagger: this.ctx.staggerOf(redisKeys.subject) })
        : await this.ctx.runner.run(admitPolicy, redisKeys, { ...this.policy(redisKeys, options.policy, options.surface), cost: 0 });
    const { rateLimit, windows } = admissionFrom(reply, 0);
    return { rateLimit, windows };
  }

  /** Clears the subject's counts on the surface: its next request starts every window afresh. */
  async reset(subject: string, options: LimitTarget = {}): Promise<void> {
    const redisKeys = this.ctx.redisKeys(subject);
    const surface = options.policy === undefined ? this.ctx.accountSurface(options.surface ?? "api") : surfaceName("Surface", options.surface ?? "api");
    const target = options.policy === undefined ? redisKeys.account : this.policy(redisKeys, options.policy, surface).counters;
    await this.ctx.runner.run(resetLimits, redisKeys, { target, surface, policy: options.policy === undefined ? 0 : 1 });
    this.ctx.denyCache?.forget(redisKeys.subject);
  }

  private policy(redisKeys: SubjectKeys, policy: unknown, surfaceArg: string | undefined): PolicyTarget {
    const surface = surfaceName("Surface", surfaceArg ?? "api");
    const id = `${String(policy)}\0${surface}`;
    let windows = this.specs.get(id);
    if (windows === undefined) {
      windows = windowsSpec(policyWindows(this.ctx.policies, policy, surface));
      this.specs.set(id, windows);
    }
    return { surface, windows, counters: redisKeys.policyCounters(policy as string, surface), stagger: this.ctx.staggerOf(redisKeys.subject), cacheKey: `p\0${id}\0${redisKeys.subject}` };
  }
}
