/**
 * Billing-cycle boundaries, the TypeScript twin of the scripts' calendar (the
 * model and the tests use it; test/cycles.test.ts checks that both agree). Month intervals
 * are calendar months in UTC counted from the anchor and clamped to month end, so an anchor
 * on Jan 31 gives Feb 28/29, then Mar 31.
 */
import { InvalidInputError } from '../errors.ts';
import { count, instant } from './validate.ts';

/** A billing-cycle length: whole days, or whole calendar months in UTC clamped to month end. */
export type Interval = { days: number } | { months: number };

/** A paid account's cycle: an anchor instant and an interval. */
export interface CycleSpec {
  /** Start of the first cycle: signup (free) or the subscription's anchor. Date or ms. */
  anchor: Date | number;
  /** The length of each cycle. */
  every: Interval;
}

/** One period (cycle) counted from an anchor: the k-th, [start, end) in ms. */
export interface Period {
  /** k: 0 for the period that starts at the anchor. */
  index: number;
  /** Its first instant (ms). */
  start: number;
  /** The first instant after it (ms). */
  end: number;
}

const DAY_MS = 86_400_000;

/** Validated interval as the scripts take it: unit 'd' or 'm' and a length. */
export function intervalArgs(every: unknown): { unit: 'd' | 'm'; length: number } {
  if (typeof every === 'object' && every !== null) {
    const keys = Object.keys(every);
    if (keys.length === 1 && 'days' in every) return { unit: 'd', length: count('Interval days', every.days, 1, 3660) };
    if (keys.length === 1 && 'months' in every) return { unit: 'm', length: count('Interval months', every.months, 1, 120) };
  }
  throw new InvalidInputError('A cycle interval is { days: n } or { months: n }');
}

export function cycleArgs(spec: CycleSpec): { anchorMs: number; unit: 'd' | 'm'; length: number } {
  return { anchorMs: instant('Cycle anchor', spec.anchor), ...intervalArgs(spec.every) };
}

/** Start (ms) of the k-th period after the anchor. */
export function periodStart(anchorMs: number, unit: 'd' | 'm', length: number, k: number): number {
  if (unit === 'd') return anchorMs + k * length * DAY_MS;
  const anchor = new Date(anchorMs);
  const msOfDay = anchorMs - Math.floor(anchorMs / DAY_MS) * DAY_MS;
  const total = anchor.getUTCFullYear() * 12 + anchor.getUTCMonth() + k * length;
  const year = Math.floor(total / 12);
  const month = total - year * 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const day = Math.min(anchor.getUTCDate(), lastDay);
  return Date.UTC(year, month, day) + msOfDay;
}

/** The period containing nowMs; before the anchor, period 0. */
export function currentPeriod(anchorMs: number, unit: 'd' | 'm', length: number, nowMs: number): Period {
  let k = 0;
  if (nowMs >= anchorMs) {
    if (unit === 'd') {
      k = Math.floor((nowMs - anchorMs) / (length * DAY_MS));
    } else {
      const a = new Date(anchorMs);
      const n = new Date(nowMs);
      const months = (n.getUTCFullYear() - a.getUTCFullYear()) * 12 + n.getUTCMonth() - a.getUTCMonth();
      k = Math.floor(months / length);
      while (k > 0 && periodStart(anchorMs, unit, length, k) > nowMs) k--;
      while (periodStart(anchorMs, unit, length, k + 1) <= nowMs) k++;
    }
  }
  return { index: k, start: periodStart(anchorMs, unit, length, k), end: periodStart(anchorMs, unit, length, k + 1) };
}
