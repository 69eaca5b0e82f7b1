/**
 * npm run bench: starts a private redis-server (free port, no persistence), runs every
 * scenario in this one process against it, prints progress and a summary with the targets of
 * the hot-path issue (met or missed), and writes bench/results/latest.md and latest.svg.
 *
 * Environment:
 *   BENCH_SECONDS=3          measured time per cell       BENCH_WARMUP=1   warm-up per cell
 *   BENCH_QUICK=1            0.5 s cells, 10,000 accounts for memory (a smoke run)
 *   BENCH_CONCURRENCY=1,16,64                             BENCH_MEMORY_ACCOUNTS=100000
 *   BENCH_ONLY=requests,holds,grants,http,memory,inprocess,events (sections)   BENCH_OUT=bench/results
 *   BENCH_HTTP_ROWS=hono,expressMiddleware,...   only these rows of the http section (keys of HTTP_SCENARIO)
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTollgate } from '../src/index.ts';
import { startRedisServer } from '../test/helpers/redisServer.ts';
import { CLIENT_NAMES, connect, type BenchClient } from './clients.ts';
import { ACCOUNTS, BENCH_PLANS, accountOf, createBenchAccounts, parallel } from './fixture.ts';
import { measure, type Measurement } from './measure.ts';
import { resetStats, scriptStats, serverCpuUs, serverVersion } from './redisInfo.ts';
import { markdown, summary, svg } from './report.ts';
import { noisy, type Results, type Row, type Section } from './results.ts';
import {
  HTTP_SCENARIO,
  bareApp,
  exampleApps,
  expressMiddlewareApp,
  expressRateLimitApp,
  fastifyApp,
  fastifyRateLimitApp,
  honoApp,
  measureHttp,
  tollgateAdmitApp,
  tollgateVerifyApp,
  type HttpTarget,
} from './scenarios/http.ts';
import { measureEventDelivery } from './scenarios/events.ts';
import { grantsScenarios, type GrantsKey } from './scenarios/grants.ts';
import { holdScenarios, type HoldKey } from './scenarios/holds.ts';
import { inProcessScenarios, type InProcessKey } from './scenarios/inprocess.ts';
import { measureMemory } from './scenarios/memory.ts';
import { requestScenarios, type RequestKey, type Scenario } from './scenarios/requests.ts';

const env = process.env;
const quick = env.BENCH_QUICK === '1';
const config = {
  seconds: Number(env.BENCH_SECONDS ?? (quick ? 0.5 : 3)),
  warmupSeconds: Number(env.BENCH_WARMUP ?? (quick ? 0.2 : 1)),
  concurrency: (env.BENCH_CONCURRENCY ?? '1,16,64').split(',').map(Number),
  memoryAccounts: Number(env.BENCH_MEMORY_ACCOUNTS ?? (quick ? 10_000 : 100_000)),
};
const sections = new Set((env.BENCH_ONLY ?? 'requests,holds,grants,http,memory,inprocess,events').split(','));
const outDir = path.resolve(env.BENCH_OUT ?? fileURLToPath(new URL('./results', import.meta.url)));
const command = [
  ...Object.entries(env)
    .filter(([name]) => name.startsWith('BENCH_'))
    .sort()
    .map(([name, value]) => `${name}=${value}`),
  'npm run bench',
].join(' ');

// Key rows run twice, interleaved with the others, so the noise of this machine shows.
const REQUEST_ORDER: ReadonlyArray<readonly [RequestKey, number]> = [
  ['floor', 1],
  ['admit', 1],
  ['admitNoTelemetry', 1],
  ['rlf', 1],
  ['precheck', 1],
  ['verify', 1],
  ['verifyPrecheck', 1],
  ['policy', 1],
  ['policyBucket', 1],
  ['policyInFlight', 1],
  ['charge', 1],
  ['chargeNoHistory', 1],
  ['rawAdmit', 1],
  ['floor', 2],
  ['admit', 2],
  ['admitNoTelemetry', 2],
  ['rlf', 2],
  ['precheck', 2],
  ['verify', 2],
  ['charge', 2],
];
const HOLD_ORDER: ReadonlyArray<readonly [HoldKey, number]> = [
  ['open1', 1],
  ['open5000', 1],
  ['rawOpen', 1],
  ['reserve01', 1],
  ['settle', 1],
  ['open1', 2],
  ['open5000', 2],
  ['rawOpen', 2],
  ['reserve01', 2],
];
// Before and after grants side by side, then twice again in the mirrored order (each pair
// before-after, then after-before), so a drift during the run weighs on both sides alike and
// noise shows in the ratios.
const GRANTS_ORDER: ReadonlyArray<readonly [GrantsKey, number]> = [
  ['chargeBefore', 1],
  ['charge0', 1],
  ['charge1', 1],
  ['charge16', 1],
  ['charge64', 1],
  ['admitBefore', 1],
  ['admit0', 1],
  ['admit1', 1],
  ['admit64', 1],
  ['admit64', 2],
  ['admit0', 2],
  ['admitBefore', 2],
  ['charge64', 2],
  ['charge0', 2],
  ['chargeBefore', 2],
  ['chargeBefore', 3],
  ['charge0', 3],
  ['admitBefore', 3],
  ['admit0', 3],
  ['admit0', 4],
  ['admitBefore', 4],
  ['charge0', 4],
  ['chargeBefore', 4],
];

const IN_PROCESS_ORDER: ReadonlyArray<readonly [InProcessKey, number]> = [
  ['memoryAdmit', 1],
  ['rlfMemory', 1],
  ['memoryAdmit', 2],
  ['rlfMemory', 2],
];

// HTTP cells are added once we know whether the example server can run.
let cellsPlanned =
  (sections.has('requests') ? CLIENT_NAMES.length * config.concurrency.length * REQUEST_ORDER.length : 0) +
  (sections.has('holds') ? CLIENT_NAMES.length * config.concurrency.length * HOLD_ORDER.length : 0) +
  (sections.has('grants') ? CLIENT_NAMES.length * config.concurrency.length * GRANTS_ORDER.length : 0) +
  (sections.has('inprocess') ? config.concurrency.length * IN_PROCESS_ORDER.length : 0);
let cellsDone = 0;

function progress(label: string, m: Measurement, extra = ''): void {
  cellsDone++;
  const count = `[${String(cellsDone).padStart(3)}/${cellsPlanned}]`;
  const ops = Math.round(m.opsPerSec).toLocaleString('en-US').padStart(8);
  console.log(`${count} ${label.padEnd(62)} ${ops} ops/s  p50 ${m.p50Ms.toFixed(3)} ms  p99 ${m.p99Ms.toFixed(3)} ms${extra}`);
}

async function runRedisCell(
  admin: BenchClient,
  client: BenchClient,
  section: Section,
  key: string,
  scenario: Scenario,
  run: number,
  concurrency: number,
): Promise<Row> {
  await scenario.prepare?.();
  let cpuBefore = 0;
  const m = await measure(scenario.op, {
    concurrency,
    seconds: config.seconds,
    warmupSeconds: config.warmupSeconds,
    beforeMeasure: async () => {
      await resetStats(admin);
      cpuBefore = await serverCpuUs(admin);
    },
  });
  const redisCpuUsPerOp = ((await serverCpuUs(admin)) - cpuBefore) / m.ops;
  const stats = await scriptStats(admin);
  const row: Row = { section, key, name: scenario.name, client: client.name, run, m, scriptCalls: stats.calls, scriptUsec: stats.usec, redisCpuUsPerOp };
  const script = stats.calls > 0 ? `  script ${(stats.usec / stats.calls).toFixed(1)} µs/call` : '';
  const cpu = `  cpu/op: client ${m.cpuUsPerOp.toFixed(1)} µs, redis ${redisCpuUsPerOp.toFixed(1)} µs`;
  const busy = noisy(row) ? '  ⚠ busy machine: script time > Redis CPU' : '';
  progress(`${client.name} c=${concurrency} ${scenario.name}${run > 1 ? ` #${run}` : ''}`, m, script + cpu + busy);
  return row;
}

async function main(): Promise<void> {
  const server = await startRedisServer();
  console.log(
    `redis-server on ${server.url}; ${config.seconds} s per cell after ${config.warmupSeconds} s warm-up; concurrency ${config.concurrency.join(', ')}`,
  );
  const results: Results = {
    startedAt: new Date().toISOString(),
    machine: {
      cpu: os.cpus()[0]?.model.trim() ?? '?',
      cores: os.availableParallelism(),
      node: process.version,
      redis: '?',
      clients: 'node-redis ' + (await version('redis')) + ', ioredis ' + (await version('ioredis')),
    },
    config,
    load: { start: os.loadavg()[0]!, end: 0 },
    command,
    rows: [],
    gaps: [],
  };
  const admin = await connect('node-redis', server.url);
  try {
    results.machine.redis = await serverVersion(admin);
    for (const name of CLIENT_NAMES) {
      if (!sections.has('requests') && !sections.has('holds') && !sections.has('grants')) break;
      const client = await connect(name, server.url);
      try {
        if (sections.has('requests')) {
          await admin.command(['FLUSHALL']);
          const scenarios = await requestScenarios(client);
          for (const c of config.concurrency) {
            for (const [key, run] of REQUEST_ORDER) results.rows.push(await runRedisCell(admin, client, 'requests', key, scenarios[key], run, c));
          }
        }
        if (sections.has('holds')) {
          const scenarios = await holdScenarios(client, admin);
          for (const c of config.concurrency) {
            for (const [key, run] of HOLD_ORDER) results.rows.push(await runRedisCell(admin, client, 'holds', key, scenarios[key], run, c));
          }
        }
        if (sections.has('grants')) {
          const scenarios = await grantsScenarios(client, admin);
          for (const c of config.concurrency) {
            for (const [key, run] of GRANTS_ORDER) results.rows.push(await runRedisCell(admin, client, 'grants', key, scenarios[key], run, c));
          }
        }
      } finally {
        await client.close();
      }
    }

    if (sections.has('inprocess')) {
      const scenarios = await inProcessScenarios();
      for (const c of config.concurrency) {
        for (const [key, run] of IN_PROCESS_ORDER) {
          const scenario = scenarios[key];
          const m = await measure(scenario.op, { concurrency: c, seconds: config.seconds, warmupSeconds: config.warmupSeconds });
          results.rows.push({ section: 'inprocess', key, name: scenario.name, client: 'memory', run, m });
          progress(`memory c=${c} ${scenario.name}${run > 1 ? ` #${run}` : ''}`, m, `  cpu/op: ${m.cpuUsPerOp.toFixed(1)} µs`);
        }
      }
    }

    if (sections.has('http')) await runHttp(admin, server.url, results);

    if (sections.has('events')) {
      results.events = [];
      for (const name of CLIENT_NAMES) {
        const client = await connect(name, server.url);
        try {
          const e = await measureEventDelivery(client, admin);
          results.events.push(e);
          console.log(
            `events ${name}: ${Math.round(e.perSecond).toLocaleString('en-US')} events/s delivered by one consumer (${e.events.toLocaleString('en-US')} events of ${e.subjects} subjects in ${e.seconds.toFixed(2)} s, ${e.scriptsPerEvent.toFixed(2)} scripts/event)`,
          );
        } finally {
          await client.close();
        }
      }
    }

    if (sections.has('memory')) {
      const client = await connect('node-redis', server.url);
      try {
        console.log(`memory: creating ${config.memoryAccounts.toLocaleString('en-US')} accounts, then a key each, then a second key each, then charges...`);
        results.memory = await measureMemory(admin, client, config.memoryAccounts);
        const mem = results.memory;
        console.log(
          `memory: ${mem.perAccount.toFixed(0)} B/idle account, ${mem.perFirstKey.toFixed(0)} B first key, ${mem.perSecondKey.toFixed(0)} B second key, ${mem.perCharge.toFixed(0)} B/charge; grants: idle account hash ${mem.idleAccountHash?.toFixed(0)} B, first grant +${mem.perFirstGrant?.toFixed(0)} B, each further +${mem.perGrant?.toFixed(0)} B`,
        );
      } finally {
        await client.close();
      }
    }
  } finally {
    await admin.close();
    await server.stop();
  }

  results.load!.end = os.loadavg()[0]!;
  await mkdir(outDir, { recursive: true });
  await writeFile(path.join(outDir, 'latest.md'), markdown(results));
  await writeFile(path.join(outDir, 'latest.svg'), svg(results));
  console.log(`\n${summary(results)}\nwrote ${path.join(outDir, 'latest.md')} and latest.svg`);
}

async function runHttp(admin: BenchClient, url: string, results: Results): Promise<void> {
  await admin.command(['FLUSHALL']);
  const client = await connect('node-redis', url);
  const io = await connect('ioredis', url);
  const rows = env.BENCH_HTTP_ROWS?.split(',');
  const example = rows && !rows.some((row) => row.startsWith('example')) ? { gap: 'not asked for (BENCH_HTTP_ROWS)' } : await exampleApps(url);
  try {
    const tg = createTollgate({ redis: client.tollgate, plans: BENCH_PLANS });
    await createBenchAccounts(tg);
    const connections = Math.max(...config.concurrency);
    const accounts = Array.from({ length: connections }, (_, i) => accountOf(i));
    const apiKeys: string[] = [];
    await parallel(Math.min(connections, ACCOUNTS), 16, async (i) => {
      apiKeys[i] = (await tg.keys.issue(accountOf(i), { name: 'http' })).key;
    });
    const onIoredis = createTollgate({ redis: io.tollgate, plans: BENCH_PLANS });
    let targets: HttpTarget[] = [
      { key: 'bare', name: HTTP_SCENARIO.bare, app: bareApp(), path: '/ping', apiKeys: accounts },
      { key: 'erl', name: HTTP_SCENARIO.erl, app: expressRateLimitApp(client), path: '/ping', apiKeys: accounts },
      { key: 'admit', name: HTTP_SCENARIO.admit, app: tollgateAdmitApp(tg), path: '/ping', apiKeys: accounts },
      { key: 'verify', name: HTTP_SCENARIO.verify, app: tollgateVerifyApp(tg), path: '/ping', apiKeys },
      { key: 'expressMiddleware', name: HTTP_SCENARIO.expressMiddleware, app: expressMiddlewareApp(tg), path: '/ping', apiKeys },
      { key: 'hono', name: HTTP_SCENARIO.hono, app: honoApp(tg), path: '/ping', apiKeys },
      { key: 'fastifyPeer', name: HTTP_SCENARIO.fastifyPeer, app: fastifyRateLimitApp(io.raw), client: 'ioredis', path: '/ping', apiKeys: accounts },
      { key: 'fastify', name: HTTP_SCENARIO.fastify, app: fastifyApp(onIoredis), client: 'ioredis', path: '/ping', apiKeys },
      { key: 'fastifySubject', name: HTTP_SCENARIO.fastifySubject, app: fastifyApp(onIoredis, 'subject'), client: 'ioredis', path: '/ping', apiKeys: accounts },
    ];
    if ('gap' in example) results.gaps.push(`HTTP through the Express example (free and charged endpoints): ${example.gap}.`);
    else targets.push(...example.targets);
    if (rows) targets = targets.filter((target) => rows.includes(target.key));
    // Bare Express runs first and last, so drift over the section shows; rows picked by
    // BENCH_HTTP_ROWS run twice each, interleaved, so the noise of this machine shows.
    const order = rows
      ? [...targets.map((t) => [t, 1] as const), ...targets.map((t) => [t, 2] as const)]
      : [...targets.map((t) => [t, 1] as const), [targets[0]!, 2] as const];
    cellsPlanned += order.length * config.concurrency.length;
    for (const c of config.concurrency) {
      for (const [target, run] of order) {
        const { m, bytesPerResponse } = await measureHttp(target, c, config.seconds, config.warmupSeconds, () => resetStats(admin));
        const stats = await scriptStats(admin);
        results.rows.push({
          section: 'http',
          key: target.key,
          name: target.name,
          client: target.client ?? 'node-redis',
          run,
          m,
          bytesPerResponse,
          scriptCalls: stats.calls,
          scriptUsec: stats.usec,
        });
        progress(
          `http connections=${c} ${target.name}${run > 1 ? ` #${run}` : ''}`,
          m,
          `  busy ${m.cpuUsPerOp.toFixed(1)} µs/req, ${(stats.calls / m.ops).toFixed(2)} scripts/req`,
        );
      }
    }
  } finally {
    if ('close' in example) await example.close();
    await client.close();
    await io.close();
  }
}

async function version(pkg: string): Promise<string> {
  const file = fileURLToPath(new URL(`../node_modules/${pkg}/package.json`, import.meta.url));
  return (JSON.parse(await readFile(file, 'utf8')) as { version: string }).version;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
