/**
 * Accounts and their billing cycles (SPEC §2-3): create on a plan, start a new cycle now
 * (billing webhook), change plan, read the ended cycles' summaries.
 * Scripts: lua/createAccount.lua, lua/startCycle.lua, lua/changePlan.lua, lua/readCycles.lua.
 */
import type { Context } from "./context.ts";
import { cycleArgs, intervalArgs, type Interval } from "./cycles.ts";
import { AccountExistsError, AccountNotFoundError } from "./errors.ts";
import { planArgs, planNamed } from "./plans.ts";
import { Code } from "./scripts/codes.ts";

export interface Cycle {
  /** 1 for the account's first cycle, then 2, 3, ... */
  id: number;
  start: number;
  end: number;
}

export interface EndedCycle extends Cycle {
  allowance: number;
  /** Credits left unused when the cycle ended; they do not roll over. */
  unused: number;
  spent: number;
  /** Still held by jobs that cycle paid for. */
  held: number;
  /** Refunded to the ended cycle after it ended; never added to a later balance. */
  refunded: number;
}

export interface CreateAccountOptions {
  plan: string;
  /** Signup instant; a free account's 30-day cycles count from it. Default: now. */
  signupAt?: Date | number;
  /** Override the plan's cycle, e.g. a paid subscription's anchor and interval. */
  cycle?: { anchor?: Date | number; every: Interval };
}

export class Accounts {
  constructor(private readonly ctx: Context) {}

  async create(accountId: string, options: CreateAccountOptions): Promise<{ accountId: string; plan: string; cycle: Cycle }> {
    const keys = this.ctx.keys(accountId);
    const plan = planNamed(this.ctx.plans, options.plan);
    const every = options.cycle?.every ?? plan.cycle;
    const anchor = options.cycle?.anchor ?? options.signupAt;
    const cycle = anchor === undefined ? { anchorMs: -1, ...intervalArgs(every) } : cycleArgs({ anchor, every });
    const reply = await this.ctx.runner.run(
      "createAccount",
      { account: keys.account, cycles: keys.cycles, journal: keys.journal },
      { nowMs: this.ctx.now(), ...planArgs(plan), ...cycle, ...this.ctx.journal },
    );
    if (reply[0] === Code.ACCOUNT_EXISTS) throw new AccountExistsError(keys.id);
    return { accountId: keys.id, plan: plan.name, cycle: cycleFrom(reply) };
  }

  /** Starts a new cycle now, re-anchoring the account here (a billing webhook, SPEC §3). */
  async startCycle(accountId: string, options: { every?: Interval } = {}): Promise<Cycle> {
    const keys = this.ctx.keys(accountId);
    const interval = options.every ? intervalArgs(options.every) : { unit: "", length: 0 };
    const reply = await this.ctx.runner.run(
      "startCycle",
      { account: keys.account, cycles: keys.cycles, journal: keys.journal },
      { nowMs: this.ctx.now(), ...interval, ...this.ctx.journal },
    );
    if (reply[0] === Code.NO_ACCOUNT) throw new AccountNotFoundError(keys.id);
    return cycleFrom(reply);
  }

  /**
   * Moves the account to another plan: request budgets and job cap at once, the allowance
   * from the next cycle, or at once with startNewCycle (SPEC §3).
   */
  async changePlan(
    accountId: string,
    planName: string,
    options: { startNewCycle?: boolean; every?: Interval } = {},
  ): Promise<Cycle> {
    const keys = this.ctx.keys(accountId);
    const plan = planNamed(this.ctx.plans, planName);
    const interval = options.every ? intervalArgs(options.every) : { unit: "", length: 0 };
    const reply = await this.ctx.runner.run(
      "changePlan",
      { account: keys.account, cycles: keys.cycles, journal: keys.journal },
      { nowMs: this.ctx.now(), ...planArgs(plan), startNow: options.startNewCycle ? 1 : 0, ...interval, ...this.ctx.journal },
    );
    if (reply[0] === Code.NO_ACCOUNT) throw new AccountNotFoundError(keys.id);
    return cycleFrom(reply);
  }

  /** Summaries of the account's ended cycles, oldest first. */
  async endedCycles(accountId: string): Promise<EndedCycle[]> {
    const keys = this.ctx.keys(accountId);
    const reply = await this.ctx.runner.run("readCycles", { cycles: keys.cycles }, {});
    const byId = new Map<number, Record<string, number>>();
    for (let i = 1; i < reply.length; i += 2) {
      const [id, field] = String(reply[i]).split(":");
      const entry = byId.get(Number(id)) ?? {};
      entry[field!] = Number(reply[i + 1]);
      byId.set(Number(id), entry);
    }
    return [...byId.entries()]
      .sort(([a], [b]) => a - b)
      .map(([id, f]) => ({
        id,
        start: f.cs ?? 0,
        end: f.ce ?? 0,
        allowance: f.a ?? 0,
        unused: f.b ?? 0,
        spent: f.s ?? 0,
        held: f.h ?? 0,
        refunded: f.r ?? 0,
      }));
  }
}

function cycleFrom(reply: unknown[]): Cycle {
  return { id: Number(reply[1]), start: Number(reply[2]), end: Number(reply[3]) };
}

