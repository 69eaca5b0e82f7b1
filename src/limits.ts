/**
 * Request limits: every window of a surface is checked and counted in one
 * script, in one round trip with the credit pre-check of a charged endpoint. A subject with
 * an account takes its plan's windows; a subject without one takes a policy's. A denied
 * request is a value and counts in no window. Scripts: admit, resetLimits.
 */
import type { Context } from './context.ts';
import type { SubjectKeys } from './redisKeys.ts';
import { withCurrentPlan } from './planEdits.ts';
import { overrideOf, overrideWord, type Override, type OverrideOptions } from './overrides.ts';
import {
  admitArgs,
  admitted,
  denied,
  leaseOf,
  leaseText,
  policyWindows,
  type Admission,
  type AdmitOptions,
  type Denial,
  type LimitState,
  type LimitTarget,
} from './rules/limits.ts';
import { mostRestrictive, shadowDenialsOf, surfaceName, windowsSpec, type RateLimitState } from './rules/windows.ts';
import { admit as admitScript, admitPolicy, listOverrides, overrideLimits, releaseLease, resetLimits } from './scripts/bundle.generated.ts';
import { Code } from './scripts/codes.ts';
import type { WindowsForm } from './windows.ts';

export type { Admission, AdmitOptions, Allowed, Denial, LimitState, LimitTarget } from './rules/limits.ts';
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
  readonly available?: number | undefined;
}

/** The admission an admit reply stands for. */
export function admissionFrom(reply: AdmitReply, credits: number, leaseTarget = ''): Admission {
  const { code } = reply;
  const refused = code === Code.RATE_LIMITED || code === Code.COST_EXCEEDS_LIMIT || code === Code.CONCURRENCY;
  const { states: windows, retries } = reply.windows;
  const { index, retryAfterMs } = mostRestrictive(windows, retries);
  const rateLimit = windows[index]!;
  // One fixed window (the common case) is never a shadow: its reply form has no retries.
  const shadowDenials = windows.length > 1 || windows[0]!.shadow ? shadowDenialsOf(windows, retries) : undefined;
  if (refused) {
    const reason = code === Code.RATE_LIMITED ? 'rate_limited' : code === Code.CONCURRENCY ? 'concurrency' : 'cost_exceeds_limit';
    return denied(reason, rateLimit, windows, retryAfterMs, shadowDenials);
  }
  const lease = reply.windows.lease > 0 ? leaseText(reply.windows.lease, leaseTarget) : undefined;
  const precheck =
    credits === 0
      ? undefined
      : { sufficient: code === Code.OK, balance: reply.balance ?? 0, available: reply.available ?? reply.balance ?? 0, needed: credits };
  return admitted(rateLimit, windows, precheck, { shadowDenials, lease });
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
      const surface = this.ctx.accountSurface(options.surface ?? 'api');
      const params = { surface, cost, credits, stagger: this.ctx.staggerOf(redisKeys.subject) };
      const reply = await withCurrentPlan(this.ctx, redisKeys, () => this.ctx.runner.run(admitScript, redisKeys, params));
      return admissionFrom(reply, credits, `${surface}:`);
    }
    const target = this.policy(redisKeys, options.policy, options.surface);
    const cache = this.ctx.denyCache;
    const cached = cache?.get(target.cacheKey, cost);
    if (cached) return cached;
    const admission = admissionFrom(await this.ctx.runner.run(admitPolicy, redisKeys, { ...target, cost }), 0, `${target.surface}:${options.policy}`);
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
        ? await withCurrentPlan(this.ctx, redisKeys, () =>
            this.ctx.runner.run(admitScript, redisKeys, {
              surface: this.ctx.accountSurface(options.surface ?? 'api'),
              cost: 0,
              credits: 0,
              stagger: this.ctx.staggerOf(redisKeys.subject),
            }),
          )
        : await this.ctx.runner.run(admitPolicy, redisKeys, { ...this.policy(redisKeys, options.policy, options.surface), cost: 0 });
    const { rateLimit, windows } = admissionFrom(reply, 0);
    return { rateLimit, windows };
  }

  /** Clears the subject's counts on the surface: its next request starts every window afresh. */
  async reset(subject: string, options: LimitTarget = {}): Promise<void> {
    const redisKeys = this.ctx.redisKeys(subject);
    const surface = options.policy === undefined ? this.ctx.accountSurface(options.surface ?? 'api') : surfaceName('Surface', options.surface ?? 'api');
    const target = options.policy === undefined ? redisKeys.account : this.policy(redisKeys, options.policy, surface).counters;
    await this.ctx.runner.run(resetLimits, redisKeys, { target, surface, policy: options.policy === undefined ? 0 : 1 });
    this.ctx.denyCache?.forget(redisKeys.subject);
  }

  /**
   * Sets one subject's own windows on a surface, in place of its plan's (or, with `policy`,
   * the policy's), without a plan change; `windows: null` clears it, and `expiresAt` ends it by
   * itself (a temporary raise, or a ban with `limit: 0`). The counts carry over: raising a
   * limit mid-window keeps what was used (docs/limits.md, "Overrides").
   *
   * @example
   * ```ts
   * // 10x the plan's requests for a launch, for one day:
   * await tollgate.limits.override("acct_42", { surface: "api", windows: [{ limit: 300, windowMs: 60_000 }], expiresAt: Date.now() + 86_400_000 });
   * ```
   */
  async override(subject: string, options: OverrideOptions): Promise<void> {
    const redisKeys = this.ctx.redisKeys(subject);
    const override = overrideWord(options);
    if (options.policy === undefined) {
      const surface = this.ctx.accountSurface(options.surface ?? 'api');
      await this.ctx.runner.run(overrideLimits, redisKeys, { target: redisKeys.account, surface, policy: 0, override, keepMs: 0 });
    } else {
      const target = this.policy(redisKeys, options.policy, options.surface);
      const longest = Math.max(...policyWindows(this.ctx.policies, options.policy, target.surface).map((w) => w.windowMs));
      await this.ctx.runner.run(overrideLimits, redisKeys, { target: target.counters, surface: target.surface, policy: 1, override, keepMs: 2 * longest });
    }
    this.ctx.denyCache?.forget(redisKeys.subject);
  }

  /**
   * Frees the place a request took under a surface's concurrency limit (its admission's
   * `lease`). Idempotent: a place freed already, or ended by its leaseMs, changes nothing.
   * Whether a place was freed.
   */
  async release(subject: string, lease: string): Promise<boolean> {
    const redisKeys = this.ctx.redisKeys(subject);
    const { id, surface, policy } = leaseOf(lease);
    const target = policy === undefined ? redisKeys.account : redisKeys.policyCounters(policy, surface);
    const reply = await this.ctx.runner.run(releaseLease, redisKeys, { target, surface, policy: policy === undefined ? 0 : 1, lease: id });
    return reply.released;
  }

  /** The subject's overrides that have not ended: its account's, then each policy's. */
  async overrides(subject: string): Promise<Override[]> {
    const redisKeys = this.ctx.redisKeys(subject);
    const targets = Object.entries(this.ctx.policies).flatMap(([policy, surfaces]) => Object.keys(surfaces).map((surface) => ({ policy, surface })));
    const reply = await this.ctx.runner.run(listOverrides, redisKeys, { policyCounters: targets.map((t) => redisKeys.policyCounters(t.policy, t.surface)) });
    return reply.overrides.map((o) => {
      if (o.at === 0) return overrideOf(o.surface, o.windows, o.expiresAt);
      const target = targets[o.at - 1]!;
      return overrideOf(target.surface, o.windows, o.expiresAt, target.policy);
    });
  }

  private policy(redisKeys: SubjectKeys, policy: unknown, surfaceArg: string | undefined): PolicyTarget {
    const surface = surfaceName('Surface', surfaceArg ?? 'api');
    const id = `${String(policy)}\0${surface}`;
    let windows = this.specs.get(id);
    if (windows === undefined) {
      windows = windowsSpec(policyWindows(this.ctx.policies, policy, surface));
      this.specs.set(id, windows);
    }
    return {
      surface,
      windows,
      counters: redisKeys.policyCounters(policy as string, surface),
      stagger: this.ctx.staggerOf(redisKeys.subject),
      cacheKey: `p\0${id}\0${redisKeys.subject}`,
    };
  }
}
