/**
 * Credits in the reference model (docs/credits.md): charges, the per-day history and the
 * journal a cycle reconciles with. Holds move credits through `journal` and `recordHistory`.
 */
import { chargeArgs, historyDaysArg, insufficient, type ChargeOutcome, type ChargeRequest, type DayUsage, type Reconciliation } from '../rules/credits.ts';
import { operationReused } from '../errors.ts';
import type { ModelAccount, ModelCore } from './core.ts';
import { roll } from './cycles.ts';
import { checkEvents } from './events.ts';

const DAY_MS = 86_400_000;

/** Journal kinds: charge (balance -> spent), reserve (balance -> held), spend (held -> spent), refund (held -> balance). */
export type JournalKind = 'charge' | 'reserve' | 'spend' | 'refund';

/**
 * Journals a movement of `amount` on cycle `cycle`. Only the current cycle's sums are kept (a
 * reconciliation reads no other); its opening grant is journaled just before its first movement.
 */
export function journal(core: ModelCore, a: ModelAccount, kind: JournalKind, amount: number, cycle: number): void {
  if (!core.journal || amount <= 0 || cycle !== a.cycle) return;
  const j = a.journal;
  if (j.cycle !== a.cycle) Object.assign(j, { cycle: a.cycle, entries: 1, balance: a.allowance, spent: 0, held: 0 });
  j.entries += 1;
  if (kind === 'charge') Object.assign(j, { balance: j.balance - amount, spent: j.spent + amount });
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

/** As tollgate.credits: charge, reconcile, history. */
export class ModelCredits {
  constructor(private readonly core: ModelCore) {}

  /** required + min(optional, balance - required), once per operation id. */
  charge(subject: string, request: ChargeRequest): ChargeOutcome {
    const a = this.core.account(subject);
    const { required, optional, operationId } = chargeArgs(request);
    const now = this.core.now();
    roll(a, now);
    const terms = `${required}:${optional}`;
    const earlier = operationId === '' ? undefined : a.operations.get(operationId, now);
    if (earlier !== undefined && earlier.terms !== terms) throw operationReused(operationId);
    if (earlier !== undefined) return { ok: true, charged: earlier.charged, balance: a.balance, replayed: true };
    if (a.balance < required) return insufficient(a.balance, required);
    const charged = required + Math.min(optional, a.balance - required);
    a.balance -= charged;
    a.spent += charged;
    if (operationId !== '') a.operations.set(operationId, { charged, terms }, now + this.core.operationTtlMs, now);
    journal(this.core, a, 'charge', charged, a.cycle);
    recordHistory(this.core, a, 's', charged);
    checkEvents(a);
    return { ok: true, charged, balance: a.balance, replayed: false };
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
