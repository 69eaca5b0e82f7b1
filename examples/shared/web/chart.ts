/**
 * The dashboard's chart of credits spent per day in the current cycle, from
 * tollgate.credits.history (UTC days; a hold's credits count on the day they are settled). It is
 * drawn on the server as SVG attributes (no script, no inline style, so the CSP holds): one bar
 * per day of the cycle, days still to come left empty.
 */
import type { Cycle, DayUsage } from 'tollgate';
import { DAY_MS, format } from './format.ts';

export interface ChartBar {
  x: number;
  y: number;
  width: number;
  height: number;
  day: number;
  spent: number;
  refunded: number;
  future: boolean;
  /** Text a pointer or a screen reader gets for the bar. */
  label: string;
}

export interface SpendChart {
  width: number;
  height: number;
  plot: { left: number; top: number; right: number; bottom: number };
  bars: ChartBar[];
  /** Horizontal guide lines with their values. */
  ticks: Array<{ y: number; value: number }>;
  /** Day labels under the axis. */
  labels: Array<{ x: number; text: string }>;
  spent: number;
  refunded: number;
  days: number;
}

/** At most this many days are drawn (and asked of the history): longer cycles show their last days. */
export const CHART_MAX_DAYS = 92;

const WIDTH = 720;
const HEIGHT = 200;
const PLOT = { left: 44, top: 12, right: WIDTH - 8, bottom: HEIGHT - 28 };

/** The cycle's UTC days, first to last, at most CHART_MAX_DAYS (the latest ones). */
export function cycleDays(cycle: Cycle): { first: number; count: number } {
  const firstDay = Math.floor(cycle.start / DAY_MS);
  const lastDay = Math.floor((cycle.end - 1) / DAY_MS);
  const count = Math.min(CHART_MAX_DAYS, lastDay - firstDay + 1);
  return { first: lastDay - count + 1, count };
}

/** Days to ask credits.history for: from the chart's first day to today. */
export function historyDays(cycle: Cycle, now: number, kept: number): number {
  const { first } = cycleDays(cycle);
  return Math.max(1, Math.min(kept, Math.floor(now / DAY_MS) - first + 1));
}

export function spendChart(history: DayUsage[], cycle: Cycle, now: number): SpendChart {
  const { first, count } = cycleDays(cycle);
  const today = Math.floor(now / DAY_MS);
  const byDay = new Map(history.map((d) => [Math.floor(d.day / DAY_MS), d]));
  const days = Array.from({ length: count }, (_, i) => {
    const day = first + i;
    const usage = byDay.get(day);
    return { day, spent: usage?.spent ?? 0, refunded: usage?.refunded ?? 0, future: day > today };
  });
  const top = niceCeiling(Math.max(1, ...days.map((d) => d.spent)));
  const plotWidth = PLOT.right - PLOT.left;
  const plotHeight = PLOT.bottom - PLOT.top;
  const step = plotWidth / count;
  const gap = Math.min(2, step * 0.2);
  const bars: ChartBar[] = days.map((d, i) => {
    const height = d.future ? 0 : (d.spent / top) * plotHeight;
    const ms = d.day * DAY_MS;
    const label = d.future
      ? `${format.day(ms)}: still to come`
      : `${format.day(ms)}: ${format.count(d.spent, 'credit')} spent${d.refunded > 0 ? `, ${format.number(d.refunded)} refunded` : ''}`;
    return {
      x: round(PLOT.left + i * step + gap / 2),
      y: round(PLOT.bottom - height),
      width: round(step - gap),
      height: round(height),
      day: ms,
      spent: d.spent,
      refunded: d.refunded,
      future: d.future,
      label,
    };
  });
  const ticks = [0, top / 2, top].filter((v) => Number.isInteger(v)).map((value) => ({ y: round(PLOT.bottom - (value / top) * plotHeight), value }));
  const every = Math.max(1, Math.ceil(count / 8));
  const labels = days
    .map((d, i) => ({ i, d }))
    .filter(({ i }) => i % every === 0)
    .map(({ i, d }) => ({ x: round(PLOT.left + i * step + step / 2), text: format.shortDay(d.day * DAY_MS) }));
  return {
    width: WIDTH,
    height: HEIGHT,
    plot: PLOT,
    bars,
    ticks,
    labels,
    spent: days.reduce((sum, d) => sum + d.spent, 0),
    refunded: days.reduce((sum, d) => sum + d.refunded, 0),
    days: count,
  };
}

/** 1, 2, 5, 10, 20, 50, ... at or above n. */
function niceCeiling(n: number): number {
  const magnitude = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 5, 10]) if (m * magnitude >= n) return m * magnitude;
  return 10 * magnitude;
}

const round = (n: number) => Math.round(n * 10) / 10;
