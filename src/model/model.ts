/**
 * The reference model of tollgate's rules in plain TypeScript with no Redis.
 * It takes the same option objects and returns the same shapes as the main API, so a host
 * drives both with one list of operations and compares the answers and the accounts
 * (accounts.inspect) after every step. It reads time from the clock it is given, never from
 * the system. Input is checked by the same functions the library uses, so bad input throws
 * the same typed errors. Not modelled: API keys, Idempotency-Key claims held by begin (keys
 * given as { key, body } are), the journal, and Redis key expiry in real time.
 */
import type { AccountSnapshot, ChangePlanOptions, CreateAccountOptions } from "../accounts.ts";
import { chargeArgs, historyDaysArg, type ChargeOutcome, type ChargeRequest, type DayUsage } from "../credits.ts";
import { currentPeriod, cycleArgs, intervalArgs, periodStart, type Interval } from "../cycles.ts";
import { AccountExistsError, AccountNotFoundError, HoldNotFoundError, InvalidInputError } from "../errors.ts";
import {
  budgetArgs,
  holdIdArg,
  openArgs,
  settleArgs,
  spendArgs,
  type EndOutcome,
  type OpenBudgetRequest,
  type OpenHoldRequest,
  type OpenOutcome,
  type SettleOutcome,
  type Settlement,
  type Spend,
} from "../holds.ts";
import { fingerprint } from "../idempotency.ts";
import { admitArgs, policyWindows, type Admission, type AdmitOptions, type LimitState, type LimitTarget } from "../limits.ts";
import { accountSurfaceCheck, DEFAULT_PLANS, planNamed, validatePlans, validatePolicies, type Plan, type PlanTable, type PolicyTable } from "../plans.ts";
import type { AccountLimits, Cycle, EndedCycle, Hold, HoldKind } from "../records.ts";
import type { Usage } from "../usage.ts";
import { count, subjectId } from "../validate.ts";
import { mostRestrictive, staggerOf, surfaceName, type RateLimitState, type Window } from "../windows.ts";

/** The model's options: createTollgate's that change the rules, and a clock it must be given. */
export interface ModelOptions {
  /** Plan table; default DEFAULT_PLANS, as createTollgate. */
  plans?: PlanTable;
  /** Policy table, as createTollgate. */
  policies?: PolicyTable;
  /** Time in ms: the model never reads the system clock. */
  clock: () => number;
  /** Hold lease; default 5 minutes, as createTollgate. */
  leaseMs?: number;
  /** Offset fixed windows per subject, as createTollgate's `stagger`. */
  stagger?: boolean;
  /** Days of history kept; false keeps none. Default 92, as createTollgate. */
  history?: false | { days: number };
}

/** One account as the model holds it. */
export interface ModelAccount {
  /** The plan's numbers as the account holds them. */
  plan: AccountLimits;
  /** Credits the current cycle started with. */
  allowance: number;
  /** The allowance from the next cycle on. */
  nextAllowance: number;
  /** Credits left in the current cycle. */
  balance: number;
  /** Credits spent in the current cycle. */
  spent: number;
  /** Credits held by open holds of the current cycle. */
  held: number;
  /** The current cycle's id. */
  cycle: number;
  /** The current cycle's first instant (ms). */
  cycleStart: number;
  /** The first instant after the current cycle (ms). */
  cycleEnd: number;
  /** The instant cycles are counted from (ms). */
  anchor: number;
  /** Cycles in days (`d`) or calendar months (`m`). */
  unit: "d" | "m";
  /** Days or months per cycle. */
  length: number;
  /** Ended cycles by id. */
  ended: Map<number, EndedCycle>;
  /** Holds by id. */
  holds: Map<string, ModelHold>;
  /** Charged operation ids and when they were charged. */
  operations: Map<string, number>;
  /** Idempotency-Keys: the body's fingerprint and the stored outcome. */
  idempotency: Map<string, { fingerprint: string; outcome: { kind: "hold"; hold: Hold } | { kind: "hold_limit_reached"; active: number; cap: number } }>;
  /** '<day><s|r>' -> credits, as the scripts keep it. */
  history: Map<string, number>;
}

/** A hold as the model holds it: the public Hold and the items settled. */
export interface ModelHold extends Hold {
  /** Ids of the items settled (or budget draws), so a repeat is a replay. */
  items_: Set<string>;
}

const DAY_MS = 86_400_000;
/** Distinct failure labels one hold may count. */
const MAX_LABELS = 16;

/**
 * The reference model: the calls of createTollgate's accounts, limits, credits, holds and
 * usage, with the same options and answers, in memory and without Redis (no keys).
 */
export class TollgateModel {
  /** The validated plan table. */
  readonly plans: PlanTable;
  /** The validated policy table. */
  readonly policies: PolicyTable;
  /** Every account by subject. */
  readonly state = new Map<string, ModelAccount>();
  /** Window counters by the key names the scripts use. */
  readonly counters = new Map<string, number>();
  private readonly clock: () => number;
  private readonly leaseMs: number;
  private readonly stagger: boolean;
  private readonly historyDays: number;
  private readonly accountSurface: (surface: unknown) => string;

  constructor(options: ModelOptions) {
    this.plans = validatePlans(options.plans ?? DEFAULT_PLANS);
    this.policies = validatePolicies(options.policies);
    this.clock = options.clock;
    this.leaseMs = count("leaseMs", options.leaseMs ?? 5 * 60_000, 1);
    this.stagger = options.stagger === true;
    this.historyDays = options.history === false ? 0 : count("history.days", options.history?.days ?? 92, 1, 3660);
    this.accountSurface = accountSurfaceCheck(this.plans);
  }

  private now(): number {
    return Math.floor(this.clock());
  }

  private account(subject: unknown): ModelAccount {
    const id = subjectId(subject);
    const a = this.state.get(id);
    if (!a) throw new AccountNotFoundError(id);
    return a;
  }

  // ---- accounts -------------------------------------------------------------------------

  /** As tollgate.accounts: create, startCycle, changePlan, limits, endedCycles, inspect. */
  readonly accounts = {
    create: (subject: string, options: CreateAccountOptions): { subject: string; plan: string; cycle: Cycle } => {
      const id = subjectId(subject);
      const plan = planNamed(this.plans, options?.plan);
      const every = options.cycle?.every ?? plan.credits.cycle;
      const anchorGiven = options.cycle?.anchor ?? options.signupAt;
      const { anchorMs, unit, length } = anchorGiven === undefined ? { anchorMs: -1, ...intervalArgs(every) } : cycleArgs({ anchor: anchorGiven, every });
      if (this.state.has(id)) throw new AccountExistsError(id);
      const now = this.now();
      const anchor = anchorMs < 0 ? now : anchorMs;
      const period = currentPeriod(anchor, unit, length, now);
      this.state.set(id, {
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
        operations: new Map(),
        idempotency: new Map(),
        history: new Map(),
      });
      return { subject: id, plan: plan.name, cycle: { id: 1, start: period.start, end: period.end } };
    },

    startCycle: (subject: string, options: { every?: Interval } = {}): Cycle => {
      const a = this.account(subject);
      const interval = options.every ? intervalArgs(options.every) : undefined;
      this.roll(a);
      this.reanchor(a, interval?.unit, interval?.length);
      return cycleOf(a);
    },

    changePlan: (subject: string, planName: string, options: ChangePlanOptions = {}): Cycle => {
      const a = this.account(subject);
      const plan = planNamed(this.plans, planName);
      const interval = options.every ? intervalArgs(options.every) : undefined;
      this.roll(a);
      a.plan = limitsOf(plan);
      a.nextAllowance = plan.credits.allowance;
      if (options.startNewCycle) this.reanchor(a, interval?.unit, interval?.length);
      return cycleOf(a);
    },

    limits: (subject: string): AccountLimits => structuredClone(this.account(subject).plan),

    endedCycles: (subject: string): EndedCycle[] => endedList(this.account(subject)),

    /** The account as tollgate's accounts.inspect reports it: no rollover, no lapsed-hold ending. */
    inspect: (subject: string): AccountSnapshot => {
      const id = subjectId(subject);
      const a = this.account(id);
      return {
        plan: structuredClone(a.plan),
        credits: { allowance: a.allowance, balance: a.balance, spent: a.spent, held: a.held, nextAllowance: a.nextAllowance },
        cycle: cycleOf(a),
        cycleSpec: { anchor: a.anchor, unit: a.unit, length: a.length },
        windows: Object.fromEntries(Object.entries(a.plan.limits).map(([surface, windows]) => [surface, this.count(this.accountCounters(id, surface), windows, id, 0).states])),
        endedCycles: endedList(a),
        holds: [...a.holds.values()].sort(newestFirst).map(publicHold),
      };
    },
  };

  /** Archive the cycle and open a new one with the next allowance. */
  private openCycle(a: ModelAccount, start: number, end: number): void {
    a.ended.set(a.cycle, { id: a.cycle, start: a.cycleStart, end: a.cycleEnd, allowance: a.allowance, unused: a.balance, spent: a.spent, held: a.held, refunded: 0 });
    a.cycle += 1;
    a.allowance = a.nextAllowance;
    a.balance = a.nextAllowance;
    a.spent = 0;
    a.held = 0;
    a.cycleStart = start;
    a.cycleEnd = end;
  }

  /** Lazy rollover: bring the account to the cycle containing now. */
  private roll(a: ModelAccount): void {
    const now = this.now();
    if (now < a.cycleEnd) return;
    const p = currentPeriod(a.anchor, a.unit, a.length, now);
    this.openCycle(a, p.start, p.end);
  }

  /** A new cycle now (call after roll): the current one ends now and is archived so. */
  private reanchor(a: ModelAccount, unit?: "d" | "m", length?: number): void {
    const now = this.now();
    if (unit) a.unit = unit;
    if (length) a.length = length;
    a.anchor = now;
    a.cycleEnd = now;
    this.openCycle(a, now, periodStart(now, a.unit, a.length, 1));
  }

  // ---- limits ---------------------------------------------------------------------------

  private accountCounters(subject: string, surface: string): string {
    return `${subject}\0account\0${surface}`;
  }

  /** The windows and counter base of a subject on a surface: a policy's or the account's. */
  private target(subject: string, options: LimitTarget): { windows: readonly Window[]; base: string; surface: string } {
    const surface = options.policy === undefined ? this.accountSurface(options.surface ?? "api") : surfaceName("Surface", options.surface ?? "api");
    if (options.policy !== undefined) {
      return { windows: policyWindows(this.policies, options.policy, surface), base: `${subject}\0policy\0${options.policy}\0${surface}`, surface };
    }
    const windows = this.account(subject).plan.limits[surface];
    if (!windows) throw new InvalidInputError(`Surface "${surface}" is not one of the surfaces of "${subject}"'s plan`);
    return { windows, base: this.accountCounters(subject, surface), surface };
  }

  /**
   * Counts `cost` (0: only looks) in every window, as the scripts do: all or none.
   * Returns each window's state, its retry (0: did not deny, -1: never fits) and the outcome.
   */
  private count(base: string, windows: readonly Window[], subject: string, cost: number) {
    const now = this.now();
    const stagger = this.stagger ? staggerOf(subject) : 0;
    let outcome: "ok" | "rate_limited" | "cost_exceeds_limit" = "ok";
    const rows = windows.map((w) => {
      const W = w.windowMs;
      const sliding = w.algorithm === "sliding";
      const offset = sliding ? 0 : stagger % W;
      const window = Math.floor((now - offset) / W);
      const elapsed = now - offset - window * W;
      const key = `${base}\0${W}\0${window}`;
      const current = this.counters.get(key) ?? 0;
      const previous = sliding ? (this.counters.get(`${base}\0${W}\0${window - 1}`) ?? 0) : 0;
      const used = sliding ? estimate(previous, current, elapsed, W) : current;
      let retry = 0;
      if (cost > w.limit) {
        retry = -1;
        outcome = "cost_exceeds_limit";
      } else if (cost > 0 && used + cost > w.limit) {
        retry = sliding ? slidingRetry(previous, current, elapsed, W, w.limit, cost) : W - elapsed;
        if (outcome === "ok") outcome = "rate_limited";
      }
      return { w, key, used, resetMs: W - elapsed, retry };
    });
    const counted = outcome === "ok" && cost > 0;
    if (counted) for (const row of rows) this.counters.set(row.key, (this.counters.get(row.key) ?? 0) + cost);
    const states: RateLimitState[] = rows.map(({ w, used, resetMs }) => ({
      limit: w.limit,
      remaining: Math.max(0, w.limit - used - (counted ? cost : 0)),
      resetMs,
      windowMs: w.windowMs,
      algorithm: w.algorithm ?? "fixed",
    }));
    return { outcome, states, retries: rows.map((r) => r.retry) };
  }

  /** As tollgate.limits: admit, peek, reset. */
  readonly limits = {
    admit: (subject: string, options: AdmitOptions = {}): Admission => {
      const id = subjectId(subject);
      const { cost, credits } = admitArgs(options);
      const target = this.target(id, options);
      const { outcome, states, retries } = this.count(target.base, target.windows, id, cost);
      const { index, retryAfterMs } = mostRestrictive(states, retries);
      const rateLimit = states[index]!;
      if (outcome !== "ok") return { allowed: false, reason: outcome, rateLimit, windows: states, retryAfterMs };
      if (credits === 0) return { allowed: true, rateLimit, windows: states };
      // No rollover on admit; past the cycle's end the pre-check sees the next allowance.
      const a = this.account(id);
      const balance = this.now() >= a.cycleEnd ? a.nextAllowance : a.balance;
      return { allowed: true, rateLimit, windows: states, credits: { sufficient: balance >= credits, balance, needed: credits } };
    },

    peek: (subject: string, options: LimitTarget = {}): LimitState => {
      const id = subjectId(subject);
      const target = this.target(id, options);
      const { states, retries } = this.count(target.base, target.windows, id, 0);
      return { rateLimit: states[mostRestrictive(states, retries).index]!, windows: states };
    },

    reset: (subject: string, options: LimitTarget = {}): void => {
      const id = subjectId(subject);
      const target = this.target(id, options);
      const now = this.now();
      const stagger = this.stagger ? staggerOf(id) : 0;
      for (const w of target.windows) {
        const offset = w.algorithm === "sliding" ? 0 : stagger % w.windowMs;
        const window = Math.floor((now - offset) / w.windowMs);
        this.counters.delete(`${target.base}\0${w.windowMs}\0${window}`);
        this.counters.delete(`${target.base}\0${w.windowMs}\0${window - 1}`);
      }
    },
  };

  // ---- credits --------------------------------------------------------------------------

  private history(a: ModelAccount, kind: "s" | "r", amount: number): void {
    if (this.historyDays === 0 || amount <= 0) return;
    const day = Math.floor(this.now() / DAY_MS);
    const field = `${day}${kind}`;
    const fresh = !a.history.has(field);
    a.history.set(field, (a.history.get(field) ?? 0) + amount);
    if (fresh) for (const key of [...a.history.keys()]) if (Number(key.slice(0, -1)) < day - this.historyDays + 1) a.history.delete(key);
  }

  /** As tollgate.credits: charge, history. */
  readonly credits = {
    /** Required + min(optional, balance - required), once per operation id. */
    charge: (subject: string, request: ChargeRequest): ChargeOutcome => {
      const a = this.account(subject);
      const { required, optional, operationId } = chargeArgs(request);
      this.roll(a);
      if (operationId !== "" && a.operations.has(operationId)) {
        return { ok: true, charged: a.operations.get(operationId)!, balance: a.balance, replayed: true };
      }
      if (a.balance < required) return { ok: false, reason: "insufficient", remaining: a.balance, needed: required };
      const charged = required + Math.min(optional, a.balance - required);
      a.balance -= charged;
      a.spent += charged;
      if (operationId !== "") a.operations.set(operationId, charged);
      this.history(a, "s", charged);
      return { ok: true, charged, balance: a.balance, replayed: false };
    },

    history: (subject: string, options: { days?: number } = {}): DayUsage[] => {
      const a = this.account(subject);
      const days = historyDaysArg(options, this.historyDays);
      const today = Math.floor(this.now() / DAY_MS);
      const byDay = new Map<number, DayUsage>();
      for (const [field, amount] of a.history) {
        const day = Number(field.slice(0, -1));
        if (day < today - days + 1) continue;
        const entry = byDay.get(day) ?? { day: day * DAY_MS, spent: 0, refunded: 0 };
        if (field.endsWith("s")) entry.spent = amount;
        else entry.refunded = amount;
        byDay.set(day, entry);
      }
      return [...byDay.entries()].sort(([x], [y]) => x - y).map(([, v]) => v);
    },
  };

  // ---- holds ----------------------------------------------------------------------------

  private spend(a: ModelAccount, h: ModelHold, n: number): void {
    if (n <= 0) return;
    if (h.cycleId === a.cycle) {
      a.held -= n;
      a.spent += n;
    } else {
      const c = a.ended.get(h.cycleId)!;
      c.held -= n;
      c.spent += n;
    }
    h.spent += n;
    h.held -= n;
    this.history(a, "s", n);
  }

  /** A refund goes to the cycle that paid; an ended cycle records it only. */
  private refund(a: ModelAccount, h: ModelHold, n: number): void {
    if (n <= 0) return;
    if (h.cycleId === a.cycle) {
      a.held -= n;
      a.balance += n;
    } else {
      const c = a.ended.get(h.cycleId)!;
      c.held -= n;
      c.refunded += n;
      h.refundedToEndedCycle += n;
    }
    h.refunded += n;
    h.held -= n;
    this.history(a, "r", n);
  }

  private endHold(a: ModelAccount, h: ModelHold, status: "completed" | "canceled", reason: NonNullable<Hold["endReason"]>): void {
    this.refund(a, h, h.reserved - h.spent - h.refunded);
    h.status = status;
    h.endReason = reason;
    h.endedAt = this.now();
  }

  private openHolds(a: ModelAccount): ModelHold[] {
    return [...a.holds.values()].filter((h) => h.status === "open");
  }

  /** End every open hold whose lease ran out (now >= lease). */
  private expireLapsed(a: ModelAccount): number {
    const now = this.now();
    const lapsed = this.openHolds(a).filter((h) => now >= h.leaseExpiresAt);
    for (const h of lapsed) this.endHold(a, h, "completed", "lease_expired");
    return lapsed.length;
  }

  private openAny(
    subject: string,
    kind: HoldKind,
    surfaceArg: string,
    size: { items: number; required: number; optional: number; amount: number },
    request: { idempotency?: { key: string; body: unknown }; holdId?: string },
  ): OpenOutcome {
    const a = this.account(subject);
    const surface = surfaceName("Surface", surfaceArg);
    const { holdId, own } = holdIdArg(request.holdId);
    const idem = request.idempotency && { key: request.idempotency.key, fingerprint: fingerprint(request.idempotency.body) };
    const now = this.now();
    this.roll(a);
    if (idem) {
      const stored = a.idempotency.get(idem.key);
      if (stored && stored.fingerprint !== idem.fingerprint) return { ok: false, reason: "idempotency_key_reused" };
      if (stored?.outcome.kind === "hold") return { ok: true, hold: structuredClone(stored.outcome.hold), replayed: true };
      if (stored?.outcome.kind === "hold_limit_reached") {
        return { ok: false, reason: "hold_limit_reached", active: stored.outcome.active, cap: stored.outcome.cap, replayed: true };
      }
    }
    this.expireLapsed(a);
    const existing = a.holds.get(holdId);
    if (existing) {
      const same = existing.kind === kind && existing.surface === surface && existing.items === size.items && existing.perItem.required === size.required && existing.perItem.optional === size.optional && (kind === "items" || existing.reserved === size.amount);
      if (!same) throw new InvalidInputError(`Hold id "${holdId}" is already taken by a hold with other terms`);
      if (idem) a.idempotency.set(idem.key, { fingerprint: idem.fingerprint, outcome: { kind: "hold", hold: publicHold(existing) } });
      return { ok: true, hold: publicHold(existing), replayed: own || idem !== undefined };
    }
    if (!a.plan.holds.surfaces.includes(surface)) return { ok: false, reason: "surface_not_allowed", surface, allowed: [...a.plan.holds.surfaces] };
    if (kind === "items" && size.items > a.plan.holds.maxItems) return { ok: false, reason: "too_many_items", max: a.plan.holds.maxItems };
    const active = this.openHolds(a).length;
    if (active >= a.plan.holds.cap) {
      if (idem) a.idempotency.set(idem.key, { fingerprint: idem.fingerprint, outcome: { kind: "hold_limit_reached", active, cap: a.plan.holds.cap } });
      return { ok: false, reason: "hold_limit_reached", active, cap: a.plan.holds.cap, replayed: false };
    }
    const reserve = kind === "items" ? size.items * (size.required + size.optional) : size.amount;
    if (a.balance < reserve) return { ok: false, reason: "insufficient", remaining: a.balance, needed: reserve };
    a.balance -= reserve;
    a.held += reserve;
    const h: ModelHold = {
      id: holdId,
      kind,
      status: "open",
      surface,
      items: size.items,
      perItem: { required: size.required, optional: size.optional },
      reserved: reserve,
      settled: 0,
      delivered: 0,
      failed: {},
      optionalSpent: 0,
      spent: 0,
      refunded: 0,
      refundedToEndedCycle: 0,
      held: reserve,
      cycleId: a.cycle,
      createdAt: now,
      endedAt: null,
      leaseExpiresAt: now + this.leaseMs,
      endReason: null,
      items_: new Set(),
    };
    a.holds.set(holdId, h);
    if (idem) a.idempotency.set(idem.key, { fingerprint: idem.fingerprint, outcome: { kind: "hold", hold: publicHold(h) } });
    return { ok: true, hold: publicHold(h), replayed: false };
  }

  private settleAny(subject: string, holdIdGiven: string, kind: HoldKind, what: { itemId: string; failed: string; optionalSpent: number; amount: number }): SettleOutcome {
    const a = this.account(subject);
    const { holdId } = holdIdArg(holdIdGiven);
    this.roll(a);
    const h = a.holds.get(holdId);
    if (h?.items_.has(what.itemId)) return { accepted: true, hold: publicHold(h), replayed: true };
    if (!h) throw new HoldNotFoundError(holdId);
    if (h.kind !== kind) throw new InvalidInputError(`Hold "${holdId}" is not of the kind this call settles (items: settle, budget: spend)`);
    if (h.status !== "open") return { accepted: false, reason: "hold_ended", hold: publicHold(h) };
    const now = this.now();
    if (now >= h.leaseExpiresAt) {
      this.endHold(a, h, "completed", "lease_expired");
      return { accepted: false, reason: "lease_expired", hold: publicHold(h) };
    }
    if (kind === "budget") {
      if (what.amount > h.reserved - h.spent) return { accepted: false, reason: "budget_exhausted", hold: publicHold(h) };
      this.spend(a, h, what.amount);
      if (what.amount > 0) h.delivered += 1;
    } else if (what.failed !== "") {
      if (h.failed[what.failed] === undefined && Object.keys(h.failed).length >= MAX_LABELS) {
        return { accepted: false, reason: "too_many_labels", hold: publicHold(h) };
      }
      h.failed[what.failed] = (h.failed[what.failed] ?? 0) + 1;
    } else {
      if (what.optionalSpent > h.perItem.optional) throw new InvalidInputError(`optionalSpent is above the optional credits per item of hold "${holdId}"`);
      this.spend(a, h, h.perItem.required + what.optionalSpent);
      h.delivered += 1;
      h.optionalSpent += what.optionalSpent;
    }
    h.settled += 1;
    h.items_.add(what.itemId);
    h.leaseExpiresAt = now + this.leaseMs;
    if (kind === "items" ? h.settled >= h.items : h.spent >= h.reserved) this.endHold(a, h, "completed", kind === "items" ? "settled" : "exhausted");
    return { accepted: true, hold: publicHold(h), replayed: false };
  }

  private end(subject: string, holdIdGiven: string, status: "completed" | "canceled"): EndOutcome {
    const a = this.account(subject);
    const { holdId } = holdIdArg(holdIdGiven);
    this.roll(a);
    const h = a.holds.get(holdId);
    if (!h) throw new HoldNotFoundError(holdId);
    if (h.status !== "open") return { ended: false, hold: publicHold(h) };
    this.endHold(a, h, status, status === "canceled" ? "canceled" : "finished");
    return { ended: true, hold: publicHold(h) };
  }

  /** As tollgate.holds: open, openBudget, settle, spend, finish, cancel, get, list, sweepSubject. */
  readonly holds = {
    open: (subject: string, request: OpenHoldRequest): OpenOutcome => {
      const size = openArgs(request);
      return this.openAny(subject, "items", request.surface ?? "api", size, request as { idempotency?: { key: string; body: unknown }; holdId?: string });
    },
    openBudget: (subject: string, request: OpenBudgetRequest): OpenOutcome => {
      const size = budgetArgs(request);
      return this.openAny(subject, "budget", request.surface ?? "web", size, request as { idempotency?: { key: string; body: unknown }; holdId?: string });
    },
    settle: (subject: string, holdId: string, settlement: Settlement): SettleOutcome => this.settleAny(subject, holdId, "items", settleArgs(settlement)),
    spend: (subject: string, holdId: string, spend: Spend): SettleOutcome => this.settleAny(subject, holdId, "budget", spendArgs(spend)),
    finish: (subject: string, holdId: string): EndOutcome => this.end(subject, holdId, "completed"),
    cancel: (subject: string, holdId: string): EndOutcome => this.end(subject, holdId, "canceled"),
    get: (subject: string, holdId: string): Hold => {
      const a = this.account(subject);
      const { holdId: id } = holdIdArg(holdId);
      this.roll(a);
      this.expireLapsed(a);
      const h = a.holds.get(id);
      if (!h) throw new HoldNotFoundError(id);
      return publicHold(h);
    },
    list: (subject: string, page: { offset?: number; limit?: number } = {}): { total: number; active: number; holds: Hold[] } => {
      const a = this.account(subject);
      const offset = count("offset", page.offset ?? 0);
      const limit = count("limit", page.limit ?? 50, 0, 1000);
      this.roll(a);
      this.expireLapsed(a);
      const all = [...a.holds.values()].sort(newestFirst);
      return { total: all.length, active: this.openHolds(a).length, holds: all.slice(offset, offset + limit).map(publicHold) };
    },
    /** Ends the subject's lapsed holds (tollgate's holds.sweepSubject). */
    sweepSubject: (subject: string): { ended: number; nextLeaseAt: number | null } => {
      const a = this.state.get(subjectId(subject));
      if (!a) return { ended: 0, nextLeaseAt: null };
      this.roll(a);
      const ended = this.expireLapsed(a);
      const leases = this.openHolds(a).map((h) => h.leaseExpiresAt);
      return { ended, nextLeaseAt: leases.length === 0 ? null : Math.min(...leases) };
    },
  };

  // ---- usage ----------------------------------------------------------------------------

  /** Usage: rolls over and ends lapsed holds first, counts nothing. */
  usage(subject: string, options: { surface?: string } = {}): Usage {
    const id = subjectId(subject);
    const surface = this.accountSurface(options.surface ?? "api");
    const a = this.account(id);
    this.roll(a);
    const windows = a.plan.limits[surface];
    if (!windows) throw new InvalidInputError(`Surface "${surface}" is not one of the surfaces of "${id}"'s plan`);
    this.expireLapsed(a);
    const { states, retries } = this.count(this.accountCounters(id, surface), windows, id, 0);
    return {
      plan: a.plan.name,
      credits: { allowance: a.allowance, balance: a.balance, spent: a.spent, held: a.held, nextAllowance: a.nextAllowance },
      cycle: cycleOf(a),
      rateLimit: { ...states[mostRestrictive(states, retries).index]!, surface },
      windows: states,
      holds: { active: this.openHolds(a).length, cap: a.plan.holds.cap, maxItems: a.plan.holds.maxItems, surfaces: [...a.plan.holds.surfaces] },
      now: this.now(),
    };
  }
}

/** floor(previous x (1 - elapsed / W)) + current: the sliding estimate. */
function estimate(previous: number, current: number, elapsed: number, windowMs: number): number {
  return Math.floor((previous * (windowMs - elapsed)) / windowMs) + current;
}

/** Ms from elapsed until a sliding window holds `cost` more; mirrors window_sliding_retry. */
function slidingRetry(previous: number, current: number, elapsed: number, windowMs: number, limit: number, cost: number): number {
  const firstFit = (prev: number, cur: number, from: number): number | null => {
    const room = limit - cur - cost;
    if (room < 0) return null;
    if (prev === 0) return from;
    let t = Math.max(from, Math.floor(windowMs - ((room + 1) * windowMs) / prev) + 1);
    while (t > from && estimate(prev, cur, t - 1, windowMs) + cost <= limit) t--;
    while (t < windowMs && estimate(prev, cur, t, windowMs) + cost > limit) t++;
    return t >= windowMs ? null : t;
  };
  const now = firstFit(previous, current, elapsed);
  if (now !== null) return now - elapsed;
  const next = firstFit(current, 0, 0);
  if (next !== null) return windowMs - elapsed + next;
  return 2 * windowMs - elapsed;
}

function limitsOf(plan: Plan & { name: string }): AccountLimits {
  return {
    name: plan.name,
    limits: Object.fromEntries(Object.entries(plan.limits).map(([s, ws]) => [s, ws.map((w) => ({ limit: w.limit, windowMs: w.windowMs, algorithm: w.algorithm ?? "fixed" }))])),
    credits: { allowance: plan.credits.allowance },
    holds: { cap: plan.holds.cap, maxItems: plan.holds.maxItems, surfaces: [...plan.holds.surfaces] },
  };
}

function cycleOf(a: ModelAccount): Cycle {
  return { id: a.cycle, start: a.cycleStart, end: a.cycleEnd };
}

function endedList(a: ModelAccount): EndedCycle[] {
  return [...a.ended.values()].sort((x, y) => x.id - y.id).map((c) => ({ ...c }));
}

/** Newest first, as ZREVRANGE orders them: by creation time, then by id in reverse byte order. */
function newestFirst(x: Hold, y: Hold): number {
  if (x.createdAt !== y.createdAt) return y.createdAt - x.createdAt;
  return x.id < y.id ? 1 : x.id > y.id ? -1 : 0;
}

function publicHold(h: ModelHold): Hold {
  const { items_: _items, ...hold } = h;
  return structuredClone({ ...hold, failed: { ...hold.failed } });
}
