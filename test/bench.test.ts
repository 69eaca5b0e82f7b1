// The bench's own instruments: the closed-loop runner reports sane numbers against a real
// Redis, its histogram's percentiles are right, and the report renders. No speed assertions.
import { describe, expect, it, onTestFinished } from 'vitest';
import { Histogram, measure } from '../bench/measure.ts';
import { markdown, svg, targets } from '../bench/report.ts';
import type { Results } from '../bench/results.ts';
import { connectNodeRedis, uniquePrefix } from './helpers/redis.ts';

describe('bench measure', () => {
  it('runs c loops for the measured time against Redis and reports ops/s with p50 <= p99', async () => {
    const client = await connectNodeRedis();
    const key = `${uniquePrefix('bench')}:n`;
    onTestFinished(async () => {
      await client.del(key);
      await client.close();
    });
    let resets = 0;
    const m = await measure(() => client.incr(key), {
      concurrency: 4,
      seconds: 0.2,
      warmupSeconds: 0.05,
      beforeMeasure: async () => {
        resets++;
      },
    });
    expect(resets).toBe(1);
    expect(m.concurrency).toBe(4);
    expect(m.ops).toBeGreaterThan(0);
    expect(m.seconds).toBeGreaterThanOrEqual(0.2);
    expect(m.opsPerSec).toBeCloseTo(m.ops / m.seconds);
    expect(m.p50Ms).toBeGreaterThan(0);
    expect(m.p50Ms).toBeLessThanOrEqual(m.p99Ms);
    expect(m.p99Ms).toBeLessThanOrEqual(m.maxMs);
    expect(m.cpuUsPerOp).toBeGreaterThan(0);
    // Warm-up and measured operations all ran; none is counted twice.
    expect(Number(await client.get(key))).toBeGreaterThanOrEqual(m.ops);
  });

  it('rejects a run that could measure nothing', async () => {
    await expect(measure(async () => {}, { concurrency: 0, seconds: 1 })).rejects.toThrow(/concurrency/);
  });
});

describe('bench histogram', () => {
  it('gives percentiles within 1% of the exact value', () => {
    const h = new Histogram();
    for (let us = 1; us <= 1000; us++) h.record(us * 1000);
    expect(h.count).toBe(1000);
    expect(Math.abs(h.percentile(50) / 500_000 - 1)).toBeLessThan(0.01);
    expect(Math.abs(h.percentile(99) / 990_000 - 1)).toBeLessThan(0.01);
    expect(h.percentile(100)).toBe(1_000_000);
  });
});

describe('bench report', () => {
  const m = (opsPerSec: number, c: number) => ({ concurrency: c, ops: opsPerSec, seconds: 1, opsPerSec, p50Ms: 0.1, p99Ms: 0.5, maxMs: 1, cpuUsPerOp: 5 });
  const results: Results = {
    startedAt: '2026-01-01T00:00:00.000Z',
    machine: { cpu: 'test cpu', cores: 2, node: 'v24', redis: '7.0', clients: 'node-redis x' },
    config: { seconds: 1, warmupSeconds: 0, concurrency: [64], memoryAccounts: 10 },
    rows: [
      { section: 'requests', key: 'floor', name: 'floor', client: 'node-redis', run: 1, m: m(100, 64), redisUsPerCall: 2, callsPerOp: 1 },
      { section: 'requests', key: 'admit', name: 'admit', client: 'node-redis', run: 1, m: m(96, 64), redisUsPerCall: 4, callsPerOp: 1 },
      { section: 'requests', key: 'rlf', name: 'peer', client: 'node-redis', run: 1, m: m(80, 64), redisUsPerCall: 3, callsPerOp: 1 },
    ],
    memory: { accounts: 10, perAccountJournalOff: 300, perAccountJournalOn: 400, perJournalEntry: 30, entryAccounts: 10, entriesPerAccount: 100 },
    gaps: ['something did not run'],
  };

  it('judges the targets from the ratios of the same run', () => {
    const byGoal = Object.fromEntries(targets(results).map((t) => [t.goal, t]));
    expect(byGoal['admit ≥ 0.95× floor']?.met).toBe(true);
    expect(byGoal['admit ≥ 1.25× rate-limiter-flexible']?.met).toBe(false);
    expect(byGoal['≤ 256 bytes per idle account, journal off']?.met).toBe(false);
  });

  it('writes the tables and a self-contained SVG', () => {
    const md = markdown(results);
    expect(md).toContain('| admit | 64 | 96 |');
    expect(md).toContain('something did not run');
    const chart = svg(results);
    expect(chart.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(chart.trim().endsWith('</svg>')).toBe(true);
    expect(chart).toContain('admit, c=64: 96 ops/s');
  });
});
