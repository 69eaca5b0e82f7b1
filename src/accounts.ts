/**
 * Accounts and their billing cycles (SPEC §2-3): create on a plan, start a new cycle now
 * (billing webhook), change plan, read the ended cycles' summaries.
 * Scripts: lua/createAccount.lua, lua/startCycle.lua, lua/changePlan.lua, lua/readCycles.lua.
 */
import type { Context } from "./context.ts";
import { cycleArgs, intervalArgs, type Interval } from "./cycles.ts";
import { AccountExistsError, AccountNotFoundError } from "./errors.ts";
import { planArgs, planNamed } from "./plans.ts";
import { jobFromFields, type Job } from "./jobRecord.ts";
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

export interface WindowCount {
  window: number;
  used: number;
}

/** Everything stored for an account, as is (see Accounts.inspect). */
export interface AccountSnapshot {
  plan: string;
  credits: { allowance: number; balance: number; spent: number; held: number; nextAllowance: number };
  cycle: Cycle;
  cycleSpec: { anchor: number; unit: "d" | "m"; length: number };
  limits: { api: number; web: number; activeJobCap: number; maxVideosPerJob: number; bulkOnApi: boolean };
  /** Requests counted in the window containing "now", per surface. */
  windows: { api: WindowCount; web: WindowCount };
  endedCycles: EndedCycle[];
  jobs: Job[];
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
      { account: keys.account },
      { nowMs: this.ctx.now(), ...planArgs(plan), ...cycle },
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
    const fields: Record<string, number> = {};
    for (let i = 1; i < reply.length; i += 2) fields[String(reply[i])] = Number(reply[i + 1]);
    return endedCyclesFrom(fields);
  }

  /**
   * Everything stored for the account, read as is: no rollover and no lapsed-job ending
   * happen on this read. For audits, admin views and model-based tests.
   */
  async inspect(accountId: string): Promise<AccountSnapshot> {
    const keys = this.ctx.keys(accountId);
    const reply = await this.ctx.runner.run(
      "inspectAccount",
      { account: keys.account, cycles: keys.cycles, jobList: keys.jobList },
      { jobKeyPrefix: keys.jobPrefix, nowMs: this.ctx.now(), windowMs: this.ctx.windowMs, apiCounters: keys.counters("api"), webCounters: keys.counters("web") },
    );
    if (Number(reply[0]) === Code.NO_ACCOUNT) throw new AccountNotFoundError(keys.id);
    const state = JSON.parse(String(reply[1])) as { account: Record<string, number | string>; cycles: Record<string, number>; jobs: unknown; api: WindowCount; web: WindowCount };
    const a = state.account;
    const n = (field: string) => Number(a[field] ?? 0);
    return {
      plan: String(a.plan),
      credits: { allowance: n("alw"), balance: n("bal"), spent: n("spent"), held: n("held"), nextAllowance: n("nalw") },
      cycle: { id: n("cyc"), start: n("cs"), end: n("ce") },
      cycleSpec: { anchor: n("anc"), unit: a.unit === "m" ? "m" : "d", length: n("len") },
      limits: { api: n("rpa"), web: n("rpw"), activeJobCap: n("cap"), maxVideosPerJob: n("maxv"), bulkOnApi: n("bulk") === 1 },
      windows: { api: state.api, web: state.web },
      // cjson encodes an empty table as {}: no jobs.
      endedCycles: endedCyclesFrom(state.cycles),
      jobs: Array.isArray(state.jobs) ? state.jobs.map((j) => jobFromFields(j as Record<string, unknown>)) : [],
    };
  }
}

/** Ended cycles from the cycles hash ("<cycle>:<field>" -> number), oldest first. */
function endedCyclesFrom(fields: Record<string, number>): EndedCycle[] {
  const byId = new Map<number, Record<string, number>>();
  for (const [key, value] of Object.entries(fields)) {
    const [id, field] = key.split(":");
    const entry = byId.get(Number(id)) ?? {};
    entry[field!] = value;
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

function cycleFrom(reply: unknown[]): Cycle {
  return { id: Number(reply[1]), start: Number(reply[2]), end: Number(reply[3]) };
}

