/**
 * npm run bench: starts a private redis-server (free port, no persistence), runs every
 * scenario in this one process against it, prints progress and a summary, and writes
 * bench/results/latest.md and latest.svg.
 *
 * Environment:
 *   BENCH_SECONDS=3          measured time per cell       BENCH_WARMUP=1   warm-up per cell
 *   BENCH_QUICK=1            0.5 s cells, 10,000 accounts for memory (a smoke run)
 *   BENCH_CONCURRENCY=1,16,64                             BENCH_MEMORY_ACCOUNTS=100000
 *   BENCH_ONLY=requests,jobs,http,memory (sections)       BENCH_OUT=bench/results
 */
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createTollgate, type Tollgate } from "../src/index.ts";
import { startRedisServer } from "../test/helpers/redisServer.ts";
import { CLIENT_NAMES, connect, type BenchClient } from "./clients.ts";
import { BENCH_PLANS, accountOf, createBenchAccounts } from "./fixture.ts";
import { measure, type Measurement } from "./measure.ts";
import { resetStats, scriptStats, serverCpuUs, serverVersion } from "./redisInfo.ts";
import { markdown, summary, svg } from "./report.ts";
import type { Results, Row, Section } from "./results.ts";
import { HTTP_SCENARIO, bareApp, exampleApps, expressRateLimitApp, measureHttp, tollgateAdmitApp, type HttpTarget } from "./scenarios/http.ts";
import { jobScenarios } from "./scenarios/jobs.ts";
import { measureMemory } from "./scenarios/memory.ts";
import { requestScenarios, type Scenario } from "./scenarios/requests.ts";

const env = process.env;
const quick = env.BENCH_QUICK === "1";
const config = {
  seconds: Number(env.BENCH_SECONDS ?? (quick ? 0.5 : 3)),
  warmupSeconds: Number(env.BENCH_WARMUP ?? (quick ? 0.2 : 1)),
  concurrency: (env.BENCH_CONCURRENCY ?? "1,16,64").split(",").map(Number),
  memoryAccounts: Number(env.BENCH_MEMORY_ACCOUNTS ?? (quick ? 10_000 : 100_000)),
};
const sections = new Set((env.BENCH_ONLY ?? "requests,jobs,http,memory").split(","));
const outDir = path.resolve(env.BENCH_OUT ?? fileURLToPath(new URL("./results", import.meta.url)));

// Key rows run twice, interleaved with the others, so the noise of this machine shows.
const REQUEST_ORDER = [
  ["floor", 1], ["admit", 1], ["rlf", 1], ["precheck", 1], ["charge", 1], ["rawAdmit", 1],
  ["floor", 2], ["admit", 2], ["rlf", 2],
] as const;
const JOB_ORDER = [["reserve1", 1], ["reserve5000", 1], ["recordResult", 1], ["reserve1", 2], ["reserve5000", 2]] as const;

// HTTP cells are added once we know whether the example server can run.
let cellsPlanned =
  (sections.has("requests") ? CLIENT_NAMES.length * config.concurrency.length * REQUEST_ORDER.length : 0) +
  (sections.has("jobs") ? CLIENT_NAMES.length * config.concurrency.length * JOB_ORDER.length : 0);
let cellsDone = 0;

function progress(label: string, m: Measurement, extra = ""): void {
  cellsDone++;
  const count = `[${String(cellsDone).padStart(3)}/${cellsPlanned}]`;
  const ops = Math.round(m.opsPerSec).toLocaleString("en-US").padStart(8);
  console.log(`${count} ${label.padEnd(62)} ${ops} ops/s  p50 ${m.p50Ms.toFixed(3)} ms  p99 ${m.p99Ms.toFixed(3)} ms${extra}`);
}

async function runRedisCell(admin: BenchClient, client: BenchClient, section: Section, key: string, scenario: Scenario, run: number, concurrency: number): Promise<Row> {
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
  const row: Row = {
    section,
    key,
    name: scenario.name,
    client: client.name,
    run,
    m,
    redisUsPerCall: stats.calls > 0 ? stats.usec / stats.calls : undefined,
    callsPerOp: stats.calls / m.ops,
    redisCpuUsPerOp,
  };
  const redis = row.redisUsPerCall === undefined ? "" : `  script ${row.redisUsPerCall.toFixed(1)} µs/call`;
  const cpu = `  cpu/op: client ${m.cpuUsPerOp.toFixed(1)} µs, redis ${redisCpuUsPerOp.toFixed(1)} µs`;
  progress(`${client.name} c=${concurrency} ${scenario.name}${run > 1 ? ` #${run}` : ""}`, m, redis + cpu);
  return row;
}

async function main(): Promise<void> {
  const server = await startRedisServer();
  console.log(`redis-server on ${server.url}; ${config.seconds} s per cell after ${config.warmupSeconds} s warm-up; concurrency ${config.concurrency.join(", ")}`);
  const results: Results = {
    startedAt: new Date().toISOString(),
    machine: {
      cpu: os.cpus()[0]?.model.trim() ?? "?",
      cores: os.availableParallelism(),
      node: process.version,
      redis: "?",
      clients: "node-redis " + (await version("redis")) + ", ioredis " + (await version("ioredis")),
    },
    config,
    rows: [],
    gaps: [],
  };
  const admin = await connect("node-redis", server.url);
  try {
    results.machine.redis = await serverVersion(admin);
    for (const name of CLIENT_NAMES) {
      if (!sections.has("requests") && !sections.has("jobs")) break;
      const client = await connect(name, server.url);
      try {
        const tg = createTollgate({ redis: client.tollgate, plans: BENCH_PLANS, leaseMs: 24 * 3_600_000 });
        await createBenchAccounts(tg);
        if (sections.has("requests")) {
          const scenarios = await requestScenarios(client, tg, "tg");
          for (const c of config.concurrency) {
            for (const [key, run] of REQUEST_ORDER) results.rows.push(await runRedisCell(admin, client, "requests", key, scenarios[key], run, c));
          }
        }
        if (sections.has("jobs")) {
          const scenarios = jobScenarios(tg);
          for (const c of config.concurrency) {
            for (const [key, run] of JOB_ORDER) results.rows.push(await runRedisCell(admin, client, "jobs", key, scenarios[key], run, c));
          }
        }
      } finally {
        await client.close();
      }
    }

    if (sections.has("http")) await runHttp(server.url, results);

    if (sections.has("memory")) {
      const client = await connect("node-redis", server.url);
      try {
        console.log(`memory: creating ${config.memoryAccounts.toLocaleString("en-US")} accounts, journal off then on...`);
        results.memory = await measureMemory(admin, client, config.memoryAccounts);
        const mem = results.memory;
        console.log(`memory: ${mem.perAccountJournalOff.toFixed(0)} B/account journal off, ${mem.perAccountJournalOn.toFixed(0)} B/account journal on, ${mem.perJournalEntry.toFixed(0)} B/journal entry`);
      } finally {
        await client.close();
      }
    }
  } finally {
    await admin.close();
    await server.stop();
  }

  await mkdir(outDir, { recursive: true });
  await writeFile(path.join(outDir, "latest.md"), markdown(results));
  await writeFile(path.join(outDir, "latest.svg"), svg(results));
  console.log(`\n${summary(results)}\nwrote ${path.join(outDir, "latest.md")} and latest.svg`);
}

async function runHttp(url: string, results: Results): Promise<void> {
  const client = await connect("node-redis", url);
  const example = await exampleApps(url);
  try {
    const tg: Tollgate = createTollgate({ redis: client.tollgate, plans: BENCH_PLANS });
    await createBenchAccounts(tg);
    const accounts = Array.from({ length: 64 }, (_, i) => accountOf(i));
    const targets: HttpTarget[] = [
      { key: "bare", name: HTTP_SCENARIO.bare, app: bareApp(), path: "/ping", apiKeys: accounts },
      { key: "erl", name: HTTP_SCENARIO.erl, app: expressRateLimitApp(client), path: "/ping", apiKeys: accounts },
      { key: "admit", name: HTTP_SCENARIO.admit, app: tollgateAdmitApp(tg), path: "/ping", apiKeys: accounts },
    ];
    if ("gap" in example) results.gaps.push(`HTTP through the Express example (free and charged endpoints): ${example.gap}.`);
    else targets.push(...example.targets);
    // Bare Express runs first and last, so drift over the section shows.
    const order = [...targets.map((t) => [t, 1] as const), [targets[0]!, 2] as const];
    cellsPlanned += order.length * config.concurrency.length;
    for (const c of config.concurrency) {
      for (const [target, run] of order) {
        const { m, bytesPerResponse } = await measureHttp(target, c, config.seconds, config.warmupSeconds);
        results.rows.push({ section: "http", key: target.key, name: target.name, client: "node-redis", run, m, bytesPerResponse });
        progress(`http connections=${c} ${target.name}${run > 1 ? ` #${run}` : ""}`, m);
      }
    }
  } finally {
    if ("close" in example) await example.close();
    await client.close();
  }
}

async function version(pkg: string): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  const file = fileURLToPath(new URL(`../node_modules/${pkg}/package.json`, import.meta.url));
  return (JSON.parse(await readFile(file, "utf8")) as { version: string }).version;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
