/**
 * Billing cycles in the reference model (docs/credits.md): a cycle rolls over lazily when an
 * account is touched past its end, and a new cycle started now ends the current one at now.
 */
import { currentPeriod, periodStart } from '../rules/cycles.ts';
import type { Cycle, EndedCycle } from '../rules/records.ts';
import type { ModelAccount } from './core.ts';
import { checkEvents } from './events.ts';
import { reorder, rollGrants } from './grants.ts';

/** Archives the cycle, ended at `ended` (default: its planned end), and opens a new one with the next allowance. */
function openCycle(a: ModelAccount, start: number, end: number, ended = a.cycleEnd): void {
  a.ended.set(a.cycle, {
    id: a.cycle,
    start: a.cycleStart,
    end: ended,
    plannedEnd: a.cycleEnd,
    allowance: a.allowance,
    unused: a.balance,
    spent: a.spent,
    held: a.held,
    refunded: 0,
  });
  a.cycle += 1;
  a.allowance = a.nextAllowance;
  a.balance = a.nextAllowance;
  a.spent = 0;
  a.held = 0;
  a.cycleStart = start;
  a.cycleEnd = end;
  a.events?.emit('cycle.started', { cycle: a.cycle, start, end, allowance: a.allowance });
  // The cycle's expiry changed: the spend order is recomputed (docs/grants.md#spend-order).
  reorder(a);
}

/** Lazy rollover: brings the account to the cycle containing now, and its grants to now (docs/grants.md#rolls). */
export function roll(a: ModelAccount, now: number): void {
  const opened = now >= a.cycleEnd;
  if (opened) {
    const p = currentPeriod(a.anchor, a.unit, a.length, now);
    openCycle(a, p.start, p.end);
  }
  // The roll's events (cycle.started, grant.expired) come first, then one check (lua/lib/events.lua).
  if (rollGrants(a, now) || opened) checkEvents(a);
}

/** A new cycle now (call after roll): the current one ends now and is archived so, its planned end kept. */
export function reanchor(a: ModelAccount, now: number, unit?: 'd' | 'm', length?: number): void {
  if (unit) a.unit = unit;
  if (length) a.length = length;
  a.anchor = now;
  openCycle(a, now, periodStart(now, a.unit, a.length, 1), now);
  checkEvents(a);
}

export function cycleOf(a: ModelAccount): Cycle {
  return { id: a.cycle, start: a.cycleStart, end: a.cycleEnd };
}

export function endedList(a: ModelAccount): EndedCycle[] {
  return [...a.ended.values()].sort((x, y) => x.id - y.id).map((c) => ({ ...c }));
}
