/**
 * Accounts in the reference model (docs/concepts.md): created on a plan with their first
 * cycle, moved to another plan, given a new cycle now, and read as a whole (inspect).
 */
import type {
  AccountPage,
  AccountSnapshot,
  ChangePlanOptions,
  CreateAccountOptions,
  DeleteAccountOptions,
  DeleteOutcome,
  ListAccountsOptions,
} from '../accounts.ts';
import { currentPeriod, cycleArgs, intervalArgs, type Interval } from '../rules/cycles.ts';
import { AccountExistsError, InvalidInputError } from '../errors.ts';
import { planNamed, type Plan } from '../rules/plans.ts';
import type { AccountLimits, Cycle, EndedCycle } from '../rules/records.ts';
import { count as countOf, subjectId } from '../rules/validate.ts';
import { ExpiringMap } from './expiring.ts';
import type { ModelAccount, ModelCore } from './core.ts';
import { cycleOf, endedList, reanchor, roll } from './cycles.ts';
import { newestFirst, openHolds, publicHold } from './holds.ts';
import { windowsInForce } from './overrides.ts';
import { countWindows } from './windows.ts';
import { checkedTable } from '../rules/windows.ts';
import { configureEvents } from './events.ts';
import { thresholdsArg, type Threshold } from '../rules/events.ts';

/** The plan's numbers as an account holds them. */
function limitsOf(plan: Plan & { name: string }): AccountLimits {
  return {
    name: plan.name,
    limits: Object.fromEntries(Object.entries(checkedTable(plan.limits)).map(([s, ws]) => [s, ws.map((w) => ({ ...w, algorithm: w.algorithm ?? 'fixed' }))])),
    credits: { allowance: plan.credits.allowance },
    holds: { cap: plan.holds.cap, maxItems: plan.holds.maxItems, surfaces: [...plan.holds.surfaces] },
  };
}

/** As tollgate.accounts: create, startCycle, changePlan, limits, endedCycles, inspect. */
export class ModelAccounts {
  constructor(private readonly core: ModelCore) {}

  /** Opens an account on a plan with its first cycle; AccountExistsError when it has one. */
  create(subject: string, options: CreateAccountOptions): { subject: string; plan: string; cycle: Cycle } {
    const id = subjectId(subject);
    const plan = planNamed(this.core.plans, options?.plan);
    const every = options.cycle?.every ?? plan.credits.cycle;
    const anchorGiven = options.cycle?.anchor ?? options.signupAt;
    const { anchorMs, unit, length } = anchorGiven === undefined ? { anchorMs: -1, ...intervalArgs(every) } : cycleArgs({ anchor: anchorGiven, every });
    if (this.core.state.has(id)) throw new AccountExistsError(id);
    const now = this.core.now();
    const anchor = anchorMs < 0 ? now : anchorMs;
    const period = currentPeriod(anchor, unit, length, now);
    const account: ModelAccount = {
      plan: limitsOf(plan),
      allowance: plan.credits.allowance,
      nextAllowance: plan.credits.allowance,
      balance: plan.credits.allowance,
      spent: 0,
      held: 0,
      cycle: 1,
      cycleStart: period.start,
      cycleEnd: period.end,
      anchor,
      unit,
      length,
      ended: new Map(),
      holds: new Map(),
      operations: new ExpiringMap(),
      droppedHolds: new ExpiringMap(),
      history: new Map(),
      journal: { cycle: 0, entries: 0, balance: 0, spent: 0, held: 0 },
      keys: new Map(),
      windows: new Map(),
      hot: undefined,
    };
    this.core.state.set(id, account);
    if (plan.events) configureEvents(account, false, plan.events.thresholds, this.core.emitter(id));
    if (plan.events) this.markCycleEnd(id, period.end);
    return { subject: id, plan: plan.name, cycle: { id: 1, start: period.start, end: period.end } };
  }

  /** Starts a new cycle now, re-anchoring the account here. */
  startCycle(subject: string, options: { every?: Interval } = {}): Cycle {
    subjectId(subject);
    const interval = options.every ? intervalArgs(options.every) : undefined;
    const a = this.core.account(subject);
    const now = this.core.now();
    roll(a, now);
    reanchor(a, now, interval?.unit, interval?.length);
    return cycleOf(a);
  }

  /** Moves the account to another plan: windows and holds rules at once, the allowance from the next cycle (or now with startNewCycle). */
  changePlan(subject: string, planName: string, options: ChangePlanOptions = {}): Cycle {
    subjectId(subject);
    const plan = planNamed(this.core.plans, planName);
    const interval = options.every ? intervalArgs(options.every) : undefined;
    const a = this.core.account(subject);
    const now = this.core.now();
    roll(a, now);
    a.plan = limitsOf(plan);
    a.hot = undefined;
    a.nextAllowance = plan.credits.allowance;
    if (!a.events?.own) configureEvents(a, false, plan.events?.thresholds ?? null, this.core.emitter(subjectId(subject)));
    if (options.startNewCycle) reanchor(a, now, interval?.unit, interval?.length);
    if (plan.events) this.markCycleEnd(subjectId(subject), a.cycleEnd);
    return cycleOf(a);
  }

  /** As tollgate.accounts.setThresholds: the account's own thresholds, or (null) its plan's again. */
  setThresholds(subject: string, thresholds: Threshold[] | null): void {
    const id = subjectId(subject);
    const list = thresholds === null ? null : thresholdsArg('thresholds', thresholds);
    const a = this.core.account(id);
    roll(a, this.core.now());
    const planEvents = this.core.plans[a.plan.name]?.events;
    configureEvents(a, list !== null, list ?? planEvents?.thresholds ?? null, this.core.emitter(id));
    this.markCycleEnd(id, a.cycleEnd);
  }

  /** As on Redis (src/sweep.ts markCycleEnd): the sweep starts the next cycle of an account with events. */
  private markCycleEnd(id: string, cycleEnd: number): void {
    const marked = this.core.sweepIndex.get(id);
    if (marked === undefined || marked > cycleEnd || marked <= this.core.now()) this.core.sweepIndex.set(id, cycleEnd);
  }

  /** The plan's numbers as the account holds them. */
  limits(subject: string): AccountLimits {
    return structuredClone(this.core.account(subject).plan);
  }

  /** Summaries of the account's ended cycles, oldest first. */
  endedCycles(subject: string): EndedCycle[] {
    return endedList(this.core.account(subject));
  }

  /** A page of the subjects with an account, in order of their ids; cursor null at the end. */
  list(options: ListAccountsOptions = {}): AccountPage {
    const count = countOf('count', options.count ?? 100, 1, 1000);
    const cursor = options.cursor ?? '0';
    if (typeof cursor !== 'string' || !/^\d+$/.test(cursor))
      throw new InvalidInputError(`cursor must be one accounts.list returned (got ${JSON.stringify(cursor)})`);
    const all = [...this.core.state.keys()].sort();
    const from = Number(cursor);
    const subjects = all.slice(from, from + count);
    return { subjects, cursor: from + count < all.length ? String(from + count) : null };
  }

  /** Deletes everything of a subject; refused while holds are open unless `force`. */
  delete(subject: string, options: DeleteAccountOptions = {}): DeleteOutcome {
    const id = subjectId(subject);
    const a = this.core.state.get(id);
    if (a && options.force !== true && openHolds(a).length > 0) return { ok: false, reason: 'holds_open' };
    this.core.state.delete(id);
    this.core.counters.deleteStartingWith(`${id}\0`);
    this.core.idempotency.deleteStartingWith(`${id}\0`);
    for (const key of this.core.overrides.keys()) if (key.startsWith(`${id}\0`)) this.core.overrides.delete(key);
    this.core.sweepIndex.delete(id);
    this.core.outboxes.delete(id);
    return { ok: true };
  }

  /** The account as stored: no rollover, no lapsed-hold ending. */
  inspect(subject: string): AccountSnapshot {
    const id = subjectId(subject);
    const a = this.core.account(id);
    const now = this.core.now();
    const stagger = this.core.staggerOf(id);
    return {
      plan: structuredClone(a.plan),
      credits: { allowance: a.allowance, balance: a.balance, spent: a.spent, held: a.held, nextAllowance: a.nextAllowance },
      cycle: cycleOf(a),
      cycleSpec: { anchor: a.anchor, unit: a.unit, length: a.length },
      windows: Object.fromEntries(
        Object.entries(checkedTable(a.plan.limits)).map(([surface, windows]) => [
          surface,
          countWindows(a.windows.get(surface) ?? [], windowsInForce(this.core, id, undefined, surface, windows, now), now, stagger, 0).states,
        ]),
      ),
      endedCycles: endedList(a),
      holds: [...a.holds.values()].sort(newestFirst).map(publicHold),
    };
  }
}
