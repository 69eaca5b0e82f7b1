/** How the pages write numbers, days and instants: English, UTC (the cycles and per-day history are UTC). */
export const DAY_MS = 86_400_000;

const numbers = new Intl.NumberFormat('en-US');
const days = new Intl.DateTimeFormat('en-GB', { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' });
const shortDays = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', timeZone: 'UTC' });
const times = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false, timeZone: 'UTC' });

export const format = {
  number: (n: number) => numbers.format(n),
  /** "12 credits", "1 credit". */
  count: (n: number, noun: string) => `${numbers.format(n)} ${noun}${n === 1 ? '' : 's'}`,
  /** "Thu, 15 Jan 2026". */
  day: (ms: number) => days.format(ms),
  /** "15 Jan". */
  shortDay: (ms: number) => shortDays.format(ms),
  /** "14:05:09 UTC". */
  time: (ms: number) => `${times.format(ms)} UTC`,
  /** "Thu, 15 Jan 2026, 14:05:09 UTC". */
  instant: (ms: number) => `${format.day(ms)}, ${format.time(ms)}`,
  /** Whole days from `now` until `end`, counting a started day as one. */
  daysLeft: (now: number, end: number) => Math.max(0, Math.ceil((end - now) / DAY_MS)),
  /** "in 42 seconds", "in 3 minutes". */
  wait: (seconds: number) => (seconds < 120 ? `in ${format.count(seconds, 'second')}` : `in ${format.count(Math.ceil(seconds / 60), 'minute')}`),
  percent: (part: number, whole: number) => (whole <= 0 ? 0 : Math.round((100 * part) / whole)),
};

export type Format = typeof format;
