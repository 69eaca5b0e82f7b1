// Credits in the reference model (docs/credits.md): charges, the per-day history and the
// journal a cycle reconciles with. Holds move credits through `journal` and `recordHistory`.
import { chargeArgs, historyDaysArg, insufficient, type ChargeOutcome, type ChargeRequest, type DayUsage, type Reconciliation } from '../rules/credits.ts';
import { GrantNotFoundError, operationReused } from '../errors.ts';
import {
  adjustArgs,
  backSlice,
  cycleGrantId,
  DEFAULT_PRIORITY,
  grantArgs,
  grantLimitReached,
  refundArgs,
  voidArgs,
  type AdjustOutcome,
  type AdjustRequest,
  type CreditSource,
  type Grant,
  type GrantOutcome,
  type GrantRequest,
  type ListGrantsOptions,
  type RefundOutcome,
  type RefundRequest,
  type VoidGrantOptions,
  type VoidOutcome,
} from '../rules/grants.ts';
import type { ModelAccount, ModelCore, ModelOperation } from './core.ts';
import { roll } from './cycles.ts';
import { checkEvents } from './events.ts';
import { subjectId } from '../rules/validate.ts';
import { addGrant, available, draw, findGrant, giveBack, listSources, makeRoom, voidLive } from './grants.ts';

const DAY_MS = 86_400_000;

/**
 * Journal kinds on the cycle: charge and adjust (balance -> spent), reserve (balance -> held),
 * spend (held -> spent), refund (held -> balance), refund_charge (spent -> balance). Grant
 * sources' entries are not in a cycle's sums: the model keeps none (docs/grants.md#journal).
 */
export type JournalKind = 'charge' | 'adjust' | 'reserve' | 'spend' | 'refund' | 'refund_charge';

/**
 * Journals a movement of `amount` on cycle `cycle`. Only the current cycle's sums are kept (a
 * reconciliation reads no other); its opening grant is journaled just before its first movement.
 */
export function journal(core: ModelCore, a: ModelAccount, kind: JournalKind, amount: number, cycle: number): void {
  if (!core.journal || amount <= 0 || cycle !== a.cycle) return;
  const j = a.journal;
  if (j.cycle !== a.cycle) Object.assign(j, { cycle: a.cycle, entries: 1, balance: a.allowance, spent: 0, held: 0 });
  j.entries += 1;
  if (kind === 'charge' || kind === 'adjust') Object.assign(j, { balance: j.balance - amount, spent: j.spent + amount });
  else if (kind === 'refund_charge') Object.assign(j, { spent: j.spent - amount, balance: j.balance + amount });
  else if (kind === 'reserve') Object.assign(j, { balance: j.balance - amount, held: j.held + amount });
  else if (kind === 'spend') Object.assign(j, { held: j.held - amount, spent: j.spent + amount });
  else Object.assign(j, { held: j.held - amount, balance: j.balance + amount });
}

/** Adds credits spent (`s`) or refunded (`r`) today to the history, dropping days no longer kept. */
export function recordHistory(core: ModelCore, a: ModelAccount, kind: 's' | 'r', amount: number): void {
  if (core.historyDays === 0 || amount <= 0) return;
  const day = Math.floor(core.now() / DAY_MS);
  const field = `${day}${kind}`;
  const fresh = !a.history.has(field);
  a.history.set(field, (a.history.get(field) ?? 0) + amount);
  if (fresh) for (const key of [...a.history.keys()]) if (Number(key.slice(0, -1)) < day - core.historyDays + 1) a.history.delete(key);
}

/** The part of a draw list the current cycle gave. */
function cyclePart(a: ModelAccount, sources: readonly CreditSource[]): number {
  const id = cycleGrantId(a.cycle);
  return sources.find((s) => s.grantId === id)?.amount ?? 0;
}

/** An earlier use of an operation id: its record, or undefined; InvalidInputError when it was used with other terms. */
function earlierUse(a: ModelAccount, operationId: string, terms: string, now: number): ModelOperation | undefined {
  const earlier = operationId === '' ? undefined : a.operations.get(operationId, now);
  if (earlier !== undefined && earlier.terms !== terms) throw operationReused(operationId);
  return earlier;
}

/** As tollgate.credits: charge, reconcile, history, grant, voidGrant, grants, adjust, refund. */
export class ModelCredits {
  /** @internal Made by TollgateModel. */
  constructor(private readonly core: ModelCore) {}

  /** required + min(optional, available - required) drawn in spend order, once per operation id. */
  charge(subject: string, request: ChargeRequest): ChargeOutcome {
    const a = this.core.account(subject);
    const { required, optional, operationId } = chargeArgs(request);
    const now = this.core.now();
    roll(a, now);
    const earlier = earlierUse(a, operationId, `${required}:${optional}`, now);
    if (earlier?.charge !== undefined) {
      const { charged, sources } = earlier.charge;
      return { ok: true, charged, balance: a.balance, available: available(a), sources: structuredClone(sources), replayed: true };
    }
    const before = available(a);
    if (before < required) return insufficient(a.balance, required, before);
    const charged = required + Math.min(optional, before - required);
    const sources = draw(a, charged, 'spent');
    if (operationId !== '') {
      a.operations.set(operationId, { terms: `${required}:${optional}`, charge: { charged, sources, refunded: 0 } }, now + this.core.operationTtlMs, now);
    }
    journal(this.core, a, 'charge', cyclePart(a, sources), a.cycle);
    recordHistory(this.core, a, 's', charged);
    checkEvents(a);
    return { ok: true, charged, balance: a.balance, available: before - charged, sources: structuredClone(sources), replayed: false };
  }

  /** Adds a grant of credits: pending until effectiveAt, spent in spend order, expiring at expiresAt (docs/grants.md). */
  grant(subject: string, request: GrantRequest): GrantOutcome {
    const a = this.core.account(subject);
    const now = this.core.now();
    const args = grantArgs(request, now);
    roll(a, now);
    // An effectiveAt left out is "now" at each try: not a term, so a retry replays.
    const effective = request.effectiveAt === undefined ? '' : String(args.effectiveAt);
    const terms = `grant:${args.amount}:${args.kind}:${args.priority}:${effective}:${args.expiresAt ?? ''}`;
    const earlier = earlierUse(a, args.operationId, terms, now);
    if (earlier !== undefined) return { ok: true, grantId: earlier.grantId!, replayed: true };
    if (!makeRoom(a, now, this.core.grantsMax)) return { ok: false, reason: 'grant_limit_reached' };
    const x = addGrant(a, now, args);
    checkEvents(a);
    // An account with events is swept for the grant's expiry notice (src/credits.ts grant).
    if (a.events && x.expiresAt !== null) this.core.mark(subjectId(subject), x.expiresAt - this.core.expiringNoticeMs);
    a.operations.set(args.operationId, { terms, grantId: x.id }, now + this.core.operationTtlMs, now);
    return { ok: true, grantId: x.id, replayed: false };
  }

  /** Voids what a grant has left; what it holds is voided as it is refunded. */
  voidGrant(subject: string, grantId: string, options: VoidGrantOptions): VoidOutcome {
    const { operationId } = voidArgs(grantId, options);
    const a = this.core.account(subject);
    const now = this.core.now();
    roll(a, now);
    const terms = `void:${grantId}`;
    const earlier = earlierUse(a, operationId, terms, now);
    if (earlier !== undefined) return { ok: true, voided: earlier.voided!, replayed: true };
    const x = findGrant(a, grantId);
    if (x === undefined) throw new GrantNotFoundError(grantId);
    const voided = x.state === 'live' || x.state === 'pending' ? voidLive(a, x, now) : 0;
    checkEvents(a);
    a.operations.set(operationId, { terms, voided }, now + this.core.operationTtlMs, now);
    return { ok: true, voided, replayed: false };
  }

  /** The sources: the current cycle, live and pending grants, and with `ended` the ended grants and cycles. */
  grants(subject: string, options: ListGrantsOptions = {}): Grant[] {
    const a = this.core.account(subject);
    roll(a, this.core.now());
    return listSources(a, options?.ended === true);
  }

  /** +n: an adjustment grant without expiry; -n: n taken in spend order, or refused whole. */
  adjust(subject: string, request: AdjustRequest): AdjustOutcome {
    const { amount, reason, operationId } = adjustArgs(request);
    const a = this.core.account(subject);
    const now = this.core.now();
    roll(a, now);
    const terms = `adjust:${amount}`;
    const earlier = earlierUse(a, operationId, terms, now);
    if (earlier?.adjusted !== undefined) return { ...structuredClone(earlier.adjusted), available: available(a), replayed: true };
    let outcome: Extract<AdjustOutcome, { ok: true }>;
    if (amount > 0) {
      if (!makeRoom(a, now, this.core.grantsMax)) {
        throw grantLimitReached(amount, this.core.grantsMax);
      }
      const x = addGrant(a, now, { amount, kind: 'adjustment', priority: DEFAULT_PRIORITY, effectiveAt: now, expiresAt: null, reason });
      outcome = { ok: true, amount, grantId: x.id, sources: [{ grantId: x.id, amount }], available: available(a), replayed: false };
    } else {
      const before = available(a);
      if (before < -amount) return { ok: false, reason: 'insufficient', available: before, needed: -amount };
      const sources = draw(a, -amount, 'spent');
      journal(this.core, a, 'adjust', cyclePart(a, sources), a.cycle);
      outcome = { ok: true, amount, grantId: null, sources, available: before + amount, replayed: false };
    }
    checkEvents(a);
    a.operations.set(operationId, { terms, adjusted: structuredClone(outcome) }, now + this.core.operationTtlMs, now);
    return outcome;
  }

  /** Returns all or part of an earlier charge to the sources that paid it, last drawn first. */
  refund(subject: string, request: RefundRequest): RefundOutcome {
    const { charge, amount, operationId } = refundArgs(request);
    const a = this.core.account(subject);
    const now = this.core.now();
    roll(a, now);
    const terms = `refund:${amount === 0 ? '' : amount}:${charge}`;
    const earlier = earlierUse(a, operationId, terms, now);
    if (earlier?.refund !== undefined) return { ...structuredClone(earlier.refund), replayed: true };
    const record = a.operations.get(charge, now)?.charge;
    if (record === undefined) return { ok: false, reason: 'unknown_charge' };
    const left = record.charged - record.refunded;
    const n = amount === 0 ? left : amount;
    if (n === 0 || n > left) return { ok: false, reason: 'exceeds_charge' };
    const sources = backSlice(record.sources, record.refunded, n);
    for (const s of sources) giveBack(a, s.grantId, s.amount, 'spent');
    record.refunded += n;
    journal(this.core, a, 'refund_charge', cyclePart(a, sources), a.cycle);
    recordHistory(this.core, a, 'r', n);
    checkEvents(a);
    const outcome = { ok: true as const, refunded: n, sources, replayed: false };
    a.operations.set(operationId, { terms, refund: structuredClone(outcome) }, now + this.core.operationTtlMs, now);
    return outcome;
  }

  /** The current cycle recomputed from the journal, beside what the account holds. */
  reconcile(subject: string): Reconciliation {
    const a = this.core.account(subject);
    roll(a, this.core.now());
    const stored = { balance: a.balance, spent: a.spent, held: a.held };
    if (!this.core.journal) return { complete: false, cycle: a.cycle, journal: { balance: 0, spent: 0, held: 0 }, stored, entries: 0, matches: false };
    const j = a.journal;
    // A cycle without a movement yet has no entry and reconciles to its allowance.
    const sums = j.cycle === a.cycle ? { balance: j.balance, spent: j.spent, held: j.held } : { balance: a.allowance, spent: 0, held: 0 };
    const entries = j.cycle === a.cycle ? j.entries : 0;
    const matches = sums.balance === stored.balance && sums.spent === stored.spent && sums.held === stored.held;
    return { complete: true, cycle: a.cycle, journal: sums, stored, entries, matches };
  }

  /** Credits spent and refunded per UTC day over the last `days` days, oldest first. */
  history(subject: string, options: { days?: number } = {}): DayUsage[] {
    const a = this.core.account(subject);
    const days = historyDaysArg(options, this.core.historyDays);
    const today = Math.floor(this.core.now() / DAY_MS);
    const byDay = new Map<number, DayUsage>();
    for (const [field, amount] of a.history) {
      const day = Number(field.slice(0, -1));
      if (day < today - days + 1) continue;
      const entry = byDay.get(day) ?? { day: day * DAY_MS, spent: 0, refunded: 0 };
      if (field.endsWith('s')) entry.spent = amount;
      else entry.refunded = amount;
      byDay.set(day, entry);
    }
    return [...byDay.entries()].sort(([x], [y]) => x - y).map(([, v]) => v);
  }
}
