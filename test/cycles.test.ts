// Billing-cycle boundaries (docs/accounts.md#billing-cycles): 30-day free cycles from signup, calendar months clamped
// to month end, and the Lua calendar agreeing with the TypeScript one used by the model.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentPeriod, periodStart } from '../src/rules/cycles.ts';
import { readLuaFile, LUA_ROOT } from '../src/scripts/bundle.ts';
import { resolveIncludes } from '../src/scripts/loader.ts';
import { connectNodeRedis } from './helpers/redis.ts';

const iso = (ms: number) => new Date(ms).toISOString();
const DAY = 86_400_000;

describe('calendar-month cycles', () => {
  it('anchored Jan 31 run to Feb 28, then Mar 31 (not Mar 28)', () => {
    const anchor = Date.UTC(2026, 0, 31, 9, 30);
    expect(iso(periodStart(anchor, 'm', 1, 1))).toBe('2026-02-28T09:30:00.000Z');
    expect(iso(periodStart(anchor, 'm', 1, 2))).toBe('2026-03-31T09:30:00.000Z');
    expect(iso(periodStart(anchor, 'm', 1, 3))).toBe('2026-04-30T09:30:00.000Z');
  });

  it('anchored Jan 31 of a leap year run to Feb 29', () => {
    expect(iso(periodStart(Date.UTC(2028, 0, 31), 'm', 1, 1))).toBe('2028-02-29T00:00:00.000Z');
  });

  it('a cycle is [start, end): the end instant belongs to the next cycle', () => {
    const anchor = Date.UTC(2026, 0, 31);
    const feb28 = Date.UTC(2026, 1, 28);
    expect(currentPeriod(anchor, 'm', 1, feb28 - 1)).toEqual({ index: 0, start: anchor, end: feb28 });
    expect(currentPeriod(anchor, 'm', 1, feb28).index).toBe(1);
  });

  it('free cycles are 30 days counted from signup: cycle k = [signup + 30d*k, signup + 30d*(k+1))', () => {
    const signup = Date.UTC(2026, 0, 10, 15);
    expect(currentPeriod(signup, 'd', 30, signup + 95 * DAY)).toEqual({ index: 3, start: signup + 90 * DAY, end: signup + 120 * DAY });
  });

  it('intervals of several months step from the anchor', () => {
    const anchor = Date.UTC(2025, 10, 30);
    expect(iso(periodStart(anchor, 'm', 3, 1))).toBe('2026-02-28T00:00:00.000Z');
    expect(iso(periodStart(anchor, 'm', 3, 2))).toBe('2026-05-30T00:00:00.000Z');
  });
});

describe('the Lua calendar agrees with the TypeScript one', () => {
  let client: Awaited<ReturnType<typeof connectNodeRedis>>;
  const source = `${resolveIncludes('lib/calendar.lua', readLuaFile(LUA_ROOT))}
local k, s, e = current_period(tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
return { k, s, e }`;
  beforeAll(async () => {
    client = await connectNodeRedis();
  });
  afterAll(() => client.close());

  it('for random anchors, intervals and instants', async () => {
    const instant = fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2090, 0, 1) });
    await fc.assert(
      fc.asyncProperty(
        instant,
        fc.constantFrom<'d' | 'm'>('d', 'm'),
        fc.integer({ min: 1, max: 13 }),
        fc.integer({ min: 0, max: 4000 * DAY }),
        async (anchor, unit, length, ahead) => {
          const now = anchor + ahead;
          const reply = (await client.eval(source, { keys: [], arguments: [String(anchor), unit, String(length), String(now)] })) as number[];
          const p = currentPeriod(anchor, unit, length, now);
          expect(reply.map(Number)).toEqual([p.index, p.start, p.end]);
          expect(p.start).toBeLessThanOrEqual(now);
          expect(now).toBeLessThan(p.end);
        },
      ),
      { numRuns: 300 },
    );
  });
});
