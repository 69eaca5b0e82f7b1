/**
 * Accounts and their billing cycles: create on a plan, start a new cycle now
 * (a billing webhook), change plan, read the plan's numbers and the ended cycles.
 * Scripts: createAccount, startCycle, changePlan, readCycles,
 * readAccount, inspectAccount.
 */
import type { Context } from './context.ts';
import { cycleArgs, intervalArgs, type Interval } from './rules/cycles.ts';
import { AccountExistsError } from './errors.ts';
import { planArgs, planNamed } from './rules/plans.ts';
import {
  creditsFrom,
  cycleFrom,
  cycleSpecFrom,
  endedCyclesFrom,
  accountAttributes,
  holdFrom,
  limitsFrom,
  type AccountLimits,
  type AccountCredits,
  type Cycle,
  type EndedCycle,
  type Hold,
} from './records.ts';
import { globEscape, scanAll, scanPage } from './scan.ts';
import { unmarkSubject } from './sweep.ts';
import { count as countOf } from './rules/validate.ts';
import {
  changePlan,
  createAccount,
  eraseAccount,
  inspectAccount,
  readAccount,
  readCycles,
  readHold,
  setThresholds,
  startCycle,
} from './scripts/bundle.generated.ts';
import { thresholdsArg, thresholdsSpec, type Threshold } from './rules/events.ts';
import { plansEventsSpec } from './rules/plans.ts';
import { markCycleEnd } from './sweep.ts';
import { Code } from './scripts/codes.ts';
import { field, list } from './scripts/reply.ts';
import { windowsForm } from './windows.ts';
import type { RateLimitState } from './rules/windows.ts';

/** Everything stored for an account, as is (see Accounts.inspect). */
export interface AccountSnapshot {
  /** The plan's numbers as the account holds them. */
  plan: AccountLimits;
  /** Credits of the current cycle. */
  credits: AccountCredits;
  /** The current cycle. */
  cycle: Cycle;
  /** How cycles are counted: from `anchor`, every `length` days (`d`) or calendar months (`m`). */
  cycleSpec: { anchor: number; unit: 'd' | 'm'; length: number };
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

/** accounts.list's options. */
export interface ListAccountsOptions {
  /** Where to go on from: the cursor of the page before. Default: the start. */
  cursor?: string | null;
  /** About how many subjects a page holds (1-1000; a page may hold fewer). Default 100. */
  count?: number;
}

/** A page of accounts.list: subjects with an account, and the cursor of the next page (null: the end). */
export interface AccountPage {
  /** Subjects with an account, in no particular order. */
  subjects: string[];
  /** Pass it to the next call; null when every account has been listed. */
  cursor: string | null;
}

/** accounts.delete's options. */
export interface DeleteAccountOptions {
  /** Delete even while holds are open (their reserved credits go with the account). Default false. */
  force?: boolean;
}

/** What accounts.delete answers: done, or refused while holds are open (nothing deleted). */
export type DeleteOutcome = { ok: true } | { ok: false; reason: 'holds_open' };

const cycleOf = (reply: { cycle: number; cycleStartMs: number; cycleEndMs: number }): Cycle => ({
  id: reply.cycle,
  start: reply.cycleStartMs,
  end: reply.cycleEndMs,
});

/**
 * Accounts and their billing cycles (`tollgate.accounts`): create on a plan, start a new cycle
 * (a billing webhook), change plan, read the plan's numbers, the ended cycles, everything stored.
 */
export class Accounts {
  /** @internal Made by createTollgate. */
  constructor(private readonly ctx: Context) {}

  /**
   * Opens an account on a plan with its first billing cycle; AccountExistsError when the
   * subject already has one, or when its account is gone but its journal, ended cycles or
   * holds survive (an evicted account is never funded again from scratch).
   *
   * @example
   * ```ts
   * await tollgate.accounts.create("acct_42", { plan: "starter" });
   * // A paid subscription anchored at its own instant, billed monthly:
   * await tollgate.accounts.create("acct_43", { plan: "pro", cycle: { anchor: subscription.start, every: { months: 1 } } });
   * ```
   */
  async create(subject: string, options: CreateAccountOptions): Promise<{ subject: string; plan: string; cycle: Cycle }> {
    const redisKeys = this.ctx.redisKeys(subject);
    const plan = planNamed(this.ctx.plans, options?.plan);
    const every = options.cycle?.every ?? plan.credits.cycle;
    const anchor = options.cycle?.anchor ?? options.signupAt;
    const cycle = anchor === undefined ? { anchorMs: -1, ...intervalArgs(every) } : cycleArgs({ anchor, every });
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const reply = await this.ctx.runner.run(createAccount, redisKeys, { ...planArgs(plan), ...cycle });
    if (reply.code === Code.ACCOUNT_EXISTS) throw new AccountExistsError(redisKeys.subject, (reply.found || 'account') as AccountExistsError['found']);
    // The sweep starts its next cycle when nobody touches it (docs/events.md#time-driven-events).
    if (plan.events) await markCycleEnd(this.ctx, redisKeys.subject, reply.cycleEndMs);
    return { subject: redisKeys.subject, plan: plan.name, cycle: cycleOf(reply) };
  }

  /** Starts a new cycle now, re-anchoring the account here (a billing webhook). */
  async startCycle(subject: string, options: { every?: Interval } = {}): Promise<Cycle> {
    const redisKeys = this.ctx.redisKeys(subject);
    const interval = options.every ? intervalArgs(options.every) : { unit: '', length: 0 };
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    return cycleOf(await this.ctx.runner.run(startCycle, redisKeys, interval));
  }

  /**
   * Moves the account to another plan: its windows and holds rules at once, the allowance
   * from the next cycle, or at once with startNewCycle.
   */
  async changePlan(subject: string, planName: string, options: ChangePlanOptions = {}): Promise<Cycle> {
    const redisKeys = this.ctx.redisKeys(subject);
    const plan = planNamed(this.ctx.plans, planName);
    const interval = options.every ? intervalArgs(options.every) : { unit: '', length: 0 };
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const reply = await this.ctx.runner.run(changePlan, redisKeys, { ...planArgs(plan), startNow: options.startNewCycle ? 1 : 0, ...interval, refresh: 0 });
    this.ctx.denyCache?.forget(redisKeys.subject);
    if (plan.events) await markCycleEnd(this.ctx, redisKeys.subject, reply.cycleEndMs);
    return cycleOf(reply);
  }

  /**
   * Gives the account thresholds of its own, which its plan's no longer change; null goes
   * back to its plan's (none when its plan names no `events`). Thresholds that hold already
   * are noted, not fired: they fire at their next crossing (docs/events.md#thresholds).
   *
   * @example
   * ```ts
   * await tollgate.accounts.setThresholds("acct_42", [{ below: 100 }, { usedPercent: 80 }]);
   * ```
   */
  async setThresholds(subject: string, thresholds: Threshold[] | null): Promise<void> {
    const redisKeys = this.ctx.redisKeys(subject);
    const own = thresholds !== null;
    const spec = own ? thresholdsSpec(thresholdsArg('thresholds', thresholds)) : plansEventsSpec(this.ctx.plans);
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const reply = await this.ctx.runner.run(setThresholds, redisKeys, { own: own ? 1 : 0, spec });
    await markCycleEnd(this.ctx, redisKeys.subject, reply.cycleEndMs);
  }

  /** The plan's numbers as the account holds them: one cheap read, counting nothing. */
  async limits(subject: string): Promise<AccountLimits> {
    const redisKeys = this.ctx.redisKeys(subject);
    const reply = await this.ctx.runner.run(readAccount, redisKeys, {});
    return limitsFrom(accountAttributes(reply.account));
  }

  /** Summaries of the account's ended cycles, oldest first. */
  async endedCycles(subject: string): Promise<EndedCycle[]> {
    const redisKeys = this.ctx.redisKeys(subject);
    const reply = await this.ctx.runner.run(readCycles, redisKeys, {});
    return endedCyclesFrom(reply.cycles);
  }

  /**
   * A page of the subjects that have an account, on one server or a whole cluster (each
   * master in turn), for a migration or an export: call again with the answer's cursor until
   * it is null. A SCAN underneath: an account created or deleted meanwhile may or may not be
   * listed, and none is listed twice unless the cluster's slots move.
   */
  async list(options: ListAccountsOptions = {}): Promise<AccountPage> {
    const count = countOf('count', options.count ?? 100, 1, 1000);
    const probe = this.ctx.redisKeys('x').account;
    const [head, tail] = [probe.slice(0, probe.indexOf('{x}')), probe.slice(probe.indexOf('{x}') + 3)];
    const page = await scanPage(this.ctx.runner, `${globEscape(head)}{*}${globEscape(tail)}`, options.cursor, count, 'hash');
    const subjects = page.keys
      .filter((key) => key.startsWith(`${head}{`) && key.endsWith(`}${tail}`))
      .map((key) => key.slice(head.length + 1, key.length - tail.length - 1));
    return { subjects, cursor: page.cursor };
  }

  /**
   * Deletes every key of a subject: its account, cycles, journal, history, holds, keys,
   * Idempotency-Keys and policy counts (an erasure request). Refused while holds are open
   * unless `force`; a subject with nothing stored is deleted already ({ ok: true }).
   */
  async delete(subject: string, options: DeleteAccountOptions = {}): Promise<DeleteOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const own = new Set([
      redisKeys.account,
      redisKeys.cycles,
      redisKeys.journal,
      redisKeys.history,
      redisKeys.holdsActive,
      redisKeys.holdsEnded,
      redisKeys.holdList,
      redisKeys.operations,
    ]);
    const base = redisKeys.account.slice(0, -1);
    const others = (await scanAll(this.ctx.runner, `${globEscape(base)}*`)).filter((key) => !own.has(key));
    const reply = await this.ctx.runner.run(eraseAccount, redisKeys, { others, force: options.force === true ? 1 : 0 });
    if (reply.code === Code.HOLDS_OPEN) return { ok: false, reason: 'holds_open' };
    await unmarkSubject(this.ctx, redisKeys.subject);
    this.ctx.denyCache?.forget(redisKeys.subject);
    return { ok: true };
  }

  /**
   * Everything stored for the account, read as is: no rollover and no lapsed-hold ending
   * happen on this read. For audits, admin views and model-based tests.
   */
  async inspect(subject: string): Promise<AccountSnapshot> {
    const redisKeys = this.ctx.redisKeys(subject);
    const reply = await this.ctx.runner.run(inspectAccount, redisKeys, { stagger: this.ctx.staggerOf(redisKeys.subject) });
    const { state } = reply;
    const a = accountAttributes(field(state, 'account'));
    // cjson sends an empty Lua table as {}: list() reads it as no hold ids.
    const counts = field(state, 'windows');
    const windows = typeof counts === 'object' && counts !== null && !Array.isArray(counts) ? Object.entries(counts) : [];
    // The holds by id, read as stored (lapsed or not) with their keys declared.
    const holdIds = list(field(state, 'holdIds')).map(String);
    const holds = holdIds.length === 0 ? [] : await this.ctx.runner.run(readHold, redisKeys, { holds: holdIds.map((id) => redisKeys.hold(id)), asStored: 1 });
    return {
      plan: limitsFrom(a),
      credits: creditsFrom(a),
      cycle: cycleFrom(a),
      cycleSpec: cycleSpecFrom(a),
      windows: Object.fromEntries(windows.map(([surface, counted]) => [surface, windowsForm(list(counted), 1).states])),
      endedCycles: endedCyclesFrom(field(state, 'cycles')),
      holds: 'holds' in holds ? holds.holds.map(holdFrom) : [],
    };
  }
}
