/**
 * Accounts and their billing cycles: create on a plan, start a new cycle now
 * (a billing webhook), change plan, read the plan's numbers and the ended cycles.
 * Scripts: createAccount, startCycle, changePlan, readCycles,
 * readAccount, inspectAccount.
 */
import type { Context } from "./context.ts";
import { cycleArgs, intervalArgs, type Interval } from "./cycles.ts";
import { AccountExistsError } from "./errors.ts";
import { planArgs, planNamed } from "./plans.ts";
import {
  creditsFrom,
  cycleFrom,
  cycleSpecFrom,
  endedCyclesFrom,
  holdFromReply,
  limitsFrom,
  type AccountAttributes,
  type AccountLimits,
  type Credits,
  type Cycle,
  type EndedCycle,
  type Hold,
} from "./records.ts";
import { changePlan, createAccount, inspectAccount, readAccount, readCycles, startCycle } from "./scripts/bundle.generated.ts";
import { Code } from "./scripts/codes.ts";
import { windowsFromReply, type RateLimitState } from "./windows.ts";

/** Everything stored for an account, as is (see Accounts.inspect). */
export interface AccountSnapshot {
  /** The plan's numbers as the account holds them. */
  plan: AccountLimits;
  /** Credits of the current cycle. */
  credits: Credits;
  /** The current cycle. */
  cycle: Cycle;
  /** How cycles are counted: from `anchor`, every `length` days (`d`) or calendar months (`m`). */
  cycleSpec: { anchor: number; unit: "d" | "m"; length: number };
  /** Each surface's windows as counted at the inspected instant. */
  windows: Record<string, RateLimitState[]>;
  /** Summaries of the ended cycles, oldest first. */
  endedCycles: EndedCycle[];
  /** Every hold, newest first. */
  holds: Hold[];
}

/** accounts.create's options. */
export interface CreateAccountOptions {
  /** A plan of the table (UnknownPlanError otherwise). */
  plan: string;
  /** Signup instant; a free account's 30-day cycles count from it. Default: now. */
  signupAt?: Date | number;
  /** Override the plan's cycle, e.g. a paid subscription's anchor and interval. */
  cycle?: { anchor?: Date | number; every: Interval };
}

/** accounts.changePlan's options. */
export interface ChangePlanOptions {
  /** Start a new cycle now, with the new plan's allowance at once. */
  startNewCycle?: boolean;
  /** With startNewCycle: a new interval. */
  every?: Interval;
}

const cycleOf = (reply: unknown[]): Cycle => ({ id: Number(reply[1]), start: Number(reply[2]), end: Number(reply[3]) });

/**
 * Accounts and their billing cycles (`tollgate.accounts`): create on a plan, start a new cycle
 * (a billing webhook), change plan, read the plan's numbers, the ended cycles, everything stored.
 */
export class Accounts {
  /** @internal Made by createTollgate. */
  constructor(private readonly ctx: Context) {}

  /**
   * Opens an account on a plan with its first billing cycle; AccountExistsError when the
   * subject already has one.
   *
   * @example
   * ```ts
   * await tollgate.accounts.create("acct_42", { plan: "starter" });
   * // A paid subscription anchored at its own instant, billed monthly:
   * await tollgate.accounts.create("acct_43", { plan: "pro", cycle: { anchor: subscription.start, every: { months: 1 } } });
   * ```
   */
  async create(subject: string, options: CreateAccountOptions): Promise<{ subject: string; plan: string; cycle: Cycle }> {
    const keys = this.ctx.keys(subject);
    const plan = planNamed(this.ctx.plans, options?.plan);
    const every = options.cycle?.every ?? plan.credits.cycle;
    const anchor = options.cycle?.anchor ?? options.signupAt;
    const cycle = anchor === undefined ? { anchorMs: -1, ...intervalArgs(every) } : cycleArgs({ anchor, every });
    const reply = await this.ctx.runner.run(createAccount, keys, { ...planArgs(plan), ...cycle });
    if (reply[0] === Code.ACCOUNT_EXISTS) throw new AccountExistsError(keys.subject);
    return { subject: keys.subject, plan: plan.name, cycle: cycleOf(reply) };
  }

  /** Starts a new cycle now, re-anchoring the account here (a billing webhook). */
  async startCycle(subject: string, options: { every?: Interval } = {}): Promise<Cycle> {
    const keys = this.ctx.keys(subject);
    const interval = options.every ? intervalArgs(options.every) : { unit: "", length: 0 };
    return cycleOf(await this.ctx.runner.run(startCycle, keys, interval));
  }

  /**
   * Moves the account to another plan: its windows and holds rules at once, the allowance
   * from the next cycle, or at once with startNewCycle.
   */
  async changePlan(subject: string, planName: string, options: ChangePlanOptions = {}): Promise<Cycle> {
    const keys = this.ctx.keys(subject);
    const plan = planNamed(this.ctx.plans, planName);
    const interval = options.every ? intervalArgs(options.every) : { unit: "", length: 0 };
    const reply = await this.ctx.runner.run(changePlan, keys, { ...planArgs(plan), startNow: options.startNewCycle ? 1 : 0, ...interval });
    this.ctx.denyCache?.forget(keys.subject);
    return cycleOf(reply);
  }

  /** The plan's numbers as the account holds them: one cheap read, counting nothing. */
  async limits(subject: string): Promise<AccountLimits> {
    const keys = this.ctx.keys(subject);
    const reply = await this.ctx.runner.run(readAccount, keys, {});
    return limitsFrom(JSON.parse(String(reply[1])) as AccountAttributes);
  }

  /** Summaries of the account's ended cycles, oldest first. */
  async endedCycles(subject: string): Promise<EndedCycle[]> {
    const keys = this.ctx.keys(subject);
    const reply = await this.ctx.runner.run(readCycles, keys, {});
    return endedCyclesFrom(JSON.parse(String(reply[1])));
  }

  /**
   * Everything stored for the account, read as is: no rollover and no lapsed-hold ending
   * happen on this read. For audits, admin views and model-based tests.
   */
  async inspect(subject: string): Promise<AccountSnapshot> {
    const keys = this.ctx.keys(subject);
    const reply = await this.ctx.runner.run(inspectAccount, keys, { stagger: this.ctx.staggerOf(keys.subject) });
    const state = JSON.parse(String(reply[1])) as { account: AccountAttributes; cycles: unknown; holds: unknown; windows: Record<string, unknown[]> | unknown[] };
    const a = state.account;
    const windows = Array.isArray(state.windows) ? {} : state.windows;
    return {
      plan: limitsFrom(a),
      credits: creditsFrom(a),
      cycle: cycleFrom(a),
      cycleSpec: cycleSpecFrom(a),
      windows: Object.fromEntries(Object.entries(windows).map(([surface, reply]) => [surface, windowsFromReply(reply).states])),
      endedCycles: endedCyclesFrom(state.cycles),
      holds: Array.isArray(state.holds) ? state.holds.map(holdFromReply) : [],
    };
  }
}
