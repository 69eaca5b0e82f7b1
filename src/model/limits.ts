/**
 * Request limits in the reference model (docs/limits.md): a subject with an account is
 * counted in its plan's windows of a surface, one without an account in a policy's; all
 * windows or none, and a denial counts nothing.
 */
import { InvalidInputError } from "../errors.ts";
import { admitArgs, policyWindows, type Admission, type AdmitOptions, type LimitState, type LimitTarget } from "../limits.ts";
import { subjectId } from "../validate.ts";
import { mostRestrictive, surfaceName, type Window } from "../windows.ts";
import type { ModelCore } from "./core.ts";
import { accountCounters, countWindows, limitState, policyCounters, resetWindows } from "./windows.ts";

/** As tollgate.limits: admit, peek, reset. */
export class ModelLimits {
  constructor(private readonly core: ModelCore) {}

  /** Counts a request of `cost` in every window of the surface, with the credit pre-check; a denial counts nothing. */
  admit(subject: string, options: AdmitOptions = {}): Admission {
    const id = subjectId(subject);
    const { cost, credits } = admitArgs(options);
    if (options.policy === undefined) return this.admitAccount(id, this.core.accountSurface(options.surface ?? "api"), cost, credits);
    const target = this.policyTarget(id, options.policy, options.surface);
    return admission(countWindows(this.core.counters, target.base, target.windows, this.core.now(), this.core.staggerOf(id), cost), 0, 0);
  }

  /**
   * Counts a request of `cost` in the account's windows of a (checked) surface, with the credit
   * pre-check when `credits` > 0; keys.verify admits so too.
   */
  admitAccount(subject: string, surface: string, cost: number, credits: number): Admission {
    const a = this.core.account(subject);
    const windows = surfaceWindows(a.plan.limits, subject, surface);
    const now = this.core.now();
    const counted = countWindows(this.core.counters, accountCounters(subject, surface), windows, now, this.core.staggerOf(subject), cost);
    // No rollover on admit: past the cycle's end the pre-check sees the next allowance.
    return admission(counted, credits, now >= a.cycleEnd ? a.nextAllowance : a.balance);
  }

  /** The surface's windows as they stand, counting nothing. */
  peek(subject: string, options: LimitTarget = {}): LimitState {
    const id = subjectId(subject);
    const target = this.target(id, options);
    return limitState(countWindows(this.core.counters, target.base, target.windows, this.core.now(), this.core.staggerOf(id), 0));
  }

  /** Clears the subject's counts on the surface. */
  reset(subject: string, options: LimitTarget = {}): void {
    const id = subjectId(subject);
    const target = this.target(id, options);
    resetWindows(this.core.counters, target.base, target.windows, this.core.now(), this.core.staggerOf(id));
  }

  /** The windows and counters of a subject on a surface: a policy's or the account's. */
  private target(subject: string, options: LimitTarget): { windows: readonly Window[]; base: string } {
    if (options.policy !== undefined) return this.policyTarget(subject, options.policy, options.surface);
    const surface = this.core.accountSurface(options.surface ?? "api");
    const windows = surfaceWindows(this.core.account(subject).plan.limits, subject, surface);
    return { windows, base: accountCounters(subject, surface) };
  }

  private policyTarget(subject: string, policy: unknown, surfaceArg: string | undefined): { windows: readonly Window[]; base: string } {
    const surface = surfaceName("Surface", surfaceArg ?? "api");
    return { windows: policyWindows(this.core.policies, policy, surface), base: policyCounters(subject, policy as string, surface) };
  }
}

/** The account's windows on a surface; a surface its plan lacks is bad input. */
export function surfaceWindows(limits: Record<string, readonly Window[]>, subject: string, surface: string): readonly Window[] {
  const windows = limits[surface];
  if (!windows) throw new InvalidInputError(`Surface "${surface}" is not one of the surfaces of "${subject}"'s plan`);
  return windows;
}

/** The admission a count answers, with the pre-check's balance when `credits` > 0. */
function admission(counted: ReturnType<typeof countWindows>, credits: number, balance: number): Admission {
  const { outcome, states, retries } = counted;
  const { index, retryAfterMs } = mostRestrictive(states, retries);
  const rateLimit = states[index]!;
  if (outcome !== "ok") return { allowed: false, reason: outcome, rateLimit, windows: states, retryAfterMs };
  if (credits === 0) return { allowed: true, rateLimit, windows: states };
  return { allowed: true, rateLimit, windows: states, credits: { sufficient: balance >= credits, balance, needed: credits } };
}
