/**
 * Billing cycles in the reference model (docs/credits.md): a cycle rolls over lazily when an
 * account is touched past its end, and a new cycle started now ends the current one at now.
 */
import { currentPeriod, periodStart } from '../rules/cycles.ts';
import type { Cycle, EndedCycle } from '../rules/records.ts';
import type { ModelAccount } from './core.ts';
import { cycleOpened } from './events.ts';

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
  cycleOpened(a);
}

/** Lazy rollover: brings the account to the cycle containing now. */
export function roll(a: ModelAccount, now: number): void {
  if (now < a.cycleEnd) return;
  const p = currentPeriod(a.anchor, a.unit, a.length, now);
  openCycle(a, p.start, p.end);
}

/** A new cycle now (call after roll): the current one ends now and is archived so, its planned end kept. */
export function reanchor(a: ModelAccount, now: number, unit?: 'd' | 'm', length?: number): void {
  if (unit) a.unit = unit;
  if (length) a.length = length;
  a.anchor = now;
  openCycle(a, now, periodStart(now, a.unit, a.length, 1), now);
}

export function cycleOf(a: ModelAccount): Cycle {
  return { id: a.cycle, start: a.cycleStart, end: a.cycleEnd };
}

export function endedList(a: ModelAccount): EndedCycle[] {
  return [...a.ended.values()].sort((x, y) => x.id - y.id).map((c) => ({ ...c }));
}
