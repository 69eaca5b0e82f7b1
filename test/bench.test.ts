// The bench's own instruments: the closed-loop runner reports sane numbers against a real
// Redis, its histogram's percentiles are right, the script time is read from INFO as Redis
// prints it, 0.1's reserveJob still runs as 0.1 ran it, and the targets are judged the right
// way round from the cells of a run. No speed assertions.
import { describe, expect, it, onTestFinished } from 'vitest';
import { fromNodeRedis } from '../src/index.ts';
import type { BenchClient } from '../bench/clients.ts';
import { recording } from '../bench/clients.ts';
import { RESERVE_JOB_01_SHA1, RESERVE_JOB_01_SOURCE, account01, keys01, reserveJob01 } from '../bench/fixtures/reserveJob01.ts';
import { Histogram, measure } from '../bench/measure.ts';
import { scriptStats } from '../bench/redisInfo.ts';
import { markdown, summary, svg } from '../bench/report.ts';
import { noisy, type Results, type Row } from '../bench/results.ts';
import { targets } from '../bench/targets.ts';
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

describe('bench Redis figures', () => {
  it("adds up EVAL, EVALSHA and FCALL from INFO commandstats and nothing else (a script's own commands are in its time)", async () => {
    const info = [
      '# Commandstats',
      'cmdstat_incr:calls=2000,usec=900,usec_per_call=0.45,rejected_calls=0,failed_calls=0',
      'cmdstat_evalsha:calls=1000,usec=4100,usec_per_call=4.10,rejected_calls=0,failed_calls=0',
      'cmdstat_eval:calls=10,usec=90,usec_per_call=9.00,rejected_calls=0,failed_calls=0',
      'cmdstat_fcall:calls=5,usec=10,usec_per_call=2.00,rejected_calls=0,failed_calls=0',
      'cmdstat_config|resetstat:calls=1,usec=84,usec_per_call=84.00,rejected_calls=0,failed_calls=0',
    ].join('\r\n');
    const admin = { command: async () => info } as unknown as BenchClient;
    expect(await scriptStats(admin)).toEqual({ calls: 1015, usec: 4200 });
  });

  it('marks a cell whose script wall time per op exceeds Redis CPU per op: redis-server lost the core mid-script', () => {
    const m = { concurrency: 1, ops: 1000, seconds: 1, opsPerSec: 1000, p50Ms: 0.1, p99Ms: 0.2, maxMs: 1, cpuUsPerOp: 5 };
    const cell = (scriptUsec: number, redisCpuUsPerOp: number): Row => ({
      section: 'requests',
      key: 'admit',
      name: 'admit',
      client: 'node-redis',
      run: 1,
      m,
      scriptCalls: 1000,
      scriptUsec,
      redisCpuUsPerOp,
    });
    expect(noisy(cell(5_000, 6))).toBe(false); // 5 µs in scripts of 6 µs of CPU: quiet
    expect(noisy(cell(9_000, 6))).toBe(true); // 9 µs of wall time in 6 µs of CPU: preempted
  });

  it('hands every command the library sends to the recorder, and its reply back to the library', async () => {
    const client = await connectNodeRedis();
    onTestFinished(() => client.close());
    const seen: string[][] = [];
    const recorder = recording(fromNodeRedis(client), (words) => seen.push(words));
    expect(await recorder.send(['PING'])).toBe('PONG');
    expect(seen).toEqual([['PING']]);
  });

  it("runs 0.1's reserveJob, byte for byte, against an account in 0.1's shape: reserves once, replays the same job id", async () => {
    const client = await connectNodeRedis();
    const account = `bench-${uniquePrefix('r').slice(-8)}`;
    const k = keys01(account);
    onTestFinished(async () => {
      await client.del([k.account, k.journal, k.activeJobs, k.jobList, `${k.jobPrefix}job_1`]);
      await client.close();
    });
    expect(await client.scriptLoad(RESERVE_JOB_01_SOURCE)).toBe(RESERVE_JOB_01_SHA1);
    await client.sendCommand(account01(account, Date.now()));
    const first = (await client.sendCommand(reserveJob01(account, 'job_1', 5_000, 60_000))) as unknown[];
    expect(first[0]).toBe(0);
    expect(JSON.parse(String(first[1]))).toMatchObject({ id: 'job_1', n: 5_000, rsv: 5_000, st: 'queued' });
    expect(await client.hGet(k.account, 'h')).toBe('5000');
    const again = (await client.sendCommand(reserveJob01(account, 'job_1', 5_000, 60_000))) as unknown[];
    expect(again[0]).toBe(13); // 0.1's REPLAYED
    expect(await client.hGet(k.account, 'h')).toBe('5000');
  });
});

describe('bench targets and report', () => {
  const m = (opsPerSec: number, c: number, p50Ms = 0.1, cpuUsPerOp = 5) => ({
    concurrency: c,
    ops: opsPerSec,
    seconds: 1,
    opsPerSec,
    p50Ms,
    p99Ms: 0.5,
    maxMs: 1,
    cpuUsPerOp,
  });
  const row = (section: Row['section'], key: string, client: string, ops: number, usPerCall: number, extra: Partial<Row> = {}): Row => ({
    section,
    key,
    name: key,
    client,
    run: 1,
    m: m(ops, 64),
    scriptCalls: ops,
    scriptUsec: ops * usPerCall,
    ...extra,
  });
  const results: Results = {
    startedAt: '2026-01-01T00:00:00.000Z',
    machine: { cpu: 'test cpu', cores: 2, node: 'v24', redis: '7.0', clients: 'node-redis x' },
    config: { seconds: 1, warmupSeconds: 0, concurrency: [64], memoryAccounts: 10 },
    command: 'BENCH_QUICK=1 npm run bench',
    rows: [
      row('requests', 'floor', 'node-redis', 100, 1.5),
      row('requests', 'admit', 'node-redis', 130, 4.5), // 3.0x the floor; 1.30x the peer
      row('requests', 'precheck', 'node-redis', 110, 6.5), // 4.33x the floor; 1.10x the peer
      row('requests', 'rlf', 'node-redis', 100, 3),
      row('holds', 'rawOpen', 'node-redis', 50, 20),
      row('holds', 'reserve01', 'node-redis', 40, 40), // 0.5x
      row('holds', 'open1', 'node-redis', 50, 10, { m: m(50, 64, 1) }),
      row('holds', 'open5000', 'node-redis', 50, 10, { m: m(50, 64, 1.3) }), // 1.3x
      row('http', 'erl', 'node-redis', 10, 0, { m: m(10, 64, 1, 40) }),
      row('http', 'verify', 'node-redis', 10, 0, { m: m(10, 64, 1, 38) }), // 0.95x
      row('inprocess', 'memoryAdmit', 'memory', 1_200, 0, { scriptCalls: undefined, scriptUsec: undefined }), // 1.2x the peer; 9.2x the Redis admit
      row('inprocess', 'rlfMemory', 'memory', 1_000, 0, { scriptCalls: undefined, scriptUsec: undefined }),
    ],
    memory: { accounts: 10, perAccount: 301, perFirstKey: 100, perSecondKey: 80, perCharge: 200, chargeAccounts: 10, chargesPerAccount: 100 },
    gaps: ['something did not run'],
  };
  const byId = Object.fromEntries(targets(results).map((t) => [t.id, t]));

  it('judges Redis µs per call against the floor and 0.1, pooled over the cells, lower being better', () => {
    expect(byId['redis:admit:node-redis']?.value).toBeCloseTo(3);
    expect(byId['redis:admit:node-redis']?.met).toBe(true);
    expect(byId['redis:precheck:node-redis']?.met).toBe(false);
    expect(byId['redis:holdOpen:node-redis']?.value).toBeCloseTo(0.5);
    expect(byId['redis:holdOpen:node-redis']?.met).toBe(true);
    // A target whose cells did not run is neither met nor missed.
    expect(byId['redis:verify:node-redis']?.met).toBeUndefined();
    expect(byId['redis:verify:node-redis']?.measured).toBe('did not run');
  });

  it('judges ops/s against the peer higher being better, and the hold p50, HTTP busy time and memory lower being better', () => {
    expect(byId['ops:admit:node-redis:c64']?.met).toBe(true);
    expect(byId['ops:precheck:node-redis:c64']?.met).toBe(false);
    expect(byId['p50:hold:node-redis:c64']?.value).toBeCloseTo(1.3);
    expect(byId['p50:hold:node-redis:c64']?.met).toBe(false);
    expect(byId['http:verify:c64']?.met).toBe(true);
    expect(byId['http:exampleFree:c64']?.met).toBeUndefined();
    expect(byId['memory:account']?.met).toBe(false);
    expect(byId['memory:key']?.met).toBe(true);
    expect(byId['ops:memoryAdmit:c64']?.value).toBeCloseTo(1.2);
    expect(byId['ops:memoryAdmit:c64']?.met).toBe(true);
    expect(byId['ops:memoryAdmitVsRedis:c64']?.value).toBeCloseTo(1_200 / 130);
    expect(byId['ops:memoryAdmitVsRedis:c64']?.met).toBe(false);
    // 0.1's figure of the same measure rides along.
    expect(byId['redis:admit:node-redis']?.before?.value).toBeGreaterThan(0);
  });

  it('judges the grants rows against the scripts before grants (a ratio) and against no grants (µs more)', () => {
    const grants: Results = {
      ...results,
      rows: [
        row('grants', 'chargeBefore', 'ioredis', 100, 10),
        row('grants', 'charge0', 'ioredis', 100, 10.4), // 1.04x
        row('grants', 'charge1', 'ioredis', 100, 13.9), // +3.5 µs
        row('grants', 'charge64', 'ioredis', 100, 14.6), // +4.2 µs
        row('grants', 'admitBefore', 'ioredis', 100, 5),
        row('grants', 'admit0', 'ioredis', 100, 5.5), // 1.1x
        row('grants', 'admit1', 'ioredis', 100, 6.2), // +0.7 µs
      ],
      memory: { ...results.memory!, perGrant: 161, perFirstGrant: 150, idleAccountHash: 250, grantAccounts: 10, grantsPerAccount: 16 },
    };
    const judged = Object.fromEntries(targets(grants).map((t) => [t.id, t]));
    expect(judged['redis:grantsCharge:ioredis']?.value).toBeCloseTo(1.04);
    expect(judged['redis:grantsCharge:ioredis']?.met).toBe(true);
    expect(judged['redis:grantsCharge1:ioredis']?.value).toBeCloseTo(3.5);
    expect(judged['redis:grantsCharge1:ioredis']?.met).toBe(true);
    expect(judged['redis:grantsCharge64:ioredis']?.met).toBe(false);
    expect(judged['redis:grantsCharge16:ioredis']?.met).toBeUndefined();
    expect(judged['redis:grantsAdmit:ioredis']?.met).toBe(false);
    expect(judged['redis:grantsAdmit1:ioredis']?.met).toBe(true);
    expect(judged['memory:grant']?.met).toBe(false);
    const md = markdown(grants);
    expect(md).toContain('## Credit grants on the hot path, ioredis');
    expect(md).toMatch(/\| Redis µs\/call: charge with 1 live grant \(the first pays\) ≤ 4 µs more than without \| [^|]+ \| \+3\.50 µs \| – \| met \|/);
  });

  it('writes the targets with met or missed, the tables, the command and a self-contained SVG', () => {
    const md = markdown(results);
    expect(md).toContain('BENCH_QUICK=1 npm run bench');
    expect(md).toMatch(/\| Redis µs\/call: admit ≤ 3\.2× floor \| 4\.50 \/ 1\.50 µs \(node-redis, c=64\) \| 3\.00× \| 3\.99× \| met \|/);
    expect(md).toContain('**missed**');
    expect(md).toContain('| admit | 64 | 130 |');
    expect(md).toContain('something did not run');
    expect(md).toContain("## In this process's memory");
    expect(md).toContain('| memoryAdmit | 64 | 1,200 |');
    expect(summary(results)).toMatch(/MISSED +Redis µs\/call: admit \+ pre-check/);
    const chart = svg(results);
    expect(chart.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(chart.trim().endsWith('</svg>')).toBe(true);
    expect(chart).toContain('admit, c=64: 130 ops/s');
  });
});
