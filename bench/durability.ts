/**
 * What durability costs a charge, on loopback: a private primary with one
 * replica, one caller charging one credit at a time, latency p50 and p99 with durability off
 * (without and with an operation id of the caller's) and with `durability: { replicas: 1 }`,
 * then the charges per second of 16 concurrent callers. Three rounds, the modes interleaved
 * within each round, through both clients.
 *
 *   node --experimental-transform-types --disable-warning=ExperimentalWarning bench/durability.ts
 *
 * Environment: DURABILITY_CHARGES=3000 (timed charges per cell), DURABILITY_ROUNDS=3.
 */
import { createTollgate, type Tollgate, type TollgateOptions } from '../src/index.ts';
import { connectFailFast, startReplicatedPair } from '../test/helpers/replicas.ts';

const CHARGES = Number(process.env.DURABILITY_CHARGES ?? 3000);
const ROUNDS = Number(process.env.DURABILITY_ROUNDS ?? 3);
const WARMUP = 500;
const CONCURRENT = 16;

type Mode = 'off' | "off, caller's id" | 'replicas: 1';
const MODES: Record<Mode, TollgateOptions['durability']> = {
  off: false,
  "off, caller's id": false,
  'replicas: 1': { replicas: 1, timeoutMs: 1000 },
};

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

let sequence = 0;
async function charges(tg: Tollgate, account: string, mode: Mode, n: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const operationId = mode === "off, caller's id" ? `b-${++sequence}` : undefined;
    const started = performance.now();
    const outcome = await tg.credits.charge(account, { required: 1, operationId });
    ms.push(performance.now() - started);
    if (!outcome.ok) throw new Error('the bench account ran out of credits');
  }
  return ms;
}

async function perSecond(tg: Tollgate, account: string, mode: Mode): Promise<number> {
  const per = Math.ceil(CHARGES / CONCURRENT);
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENT }, () => charges(tg, account, mode, per)));
  return Math.round((per * CONCURRENT * 1000) / (performance.now() - started));
}

const pair = await startReplicatedPair();
const rows: string[] = [];
try {
  for (const kind of ['node-redis', 'ioredis'] as const) {
    const client = await connectFailFast(kind, pair.primary.port);
    const results = new Map<Mode, { p50: number[]; p99: number[]; rate: number[] }>();
    for (let round = 1; round <= ROUNDS; round++) {
      for (const mode of Object.keys(MODES) as Mode[]) {
        const tg = createTollgate({
          redis: client.adapter,
          prefix: `bench-durability-${round}`,
          plans: {
            big: {
              limits: { api: [{ limit: 1_000_000, windowMs: 60_000 }] },
              credits: { allowance: 100_000_000, cycle: { months: 1 } },
              holds: { cap: 1, maxItems: 1, surfaces: ['api'] },
            },
          },
          durability: MODES[mode],
          journal: { maxEntries: 1000 },
        });
        const account = `${kind}-${mode.replace(/\W+/g, '')}-${round}`;
        await tg.accounts.create(account, { plan: 'big' });
        await charges(tg, account, mode, WARMUP);
        const sorted = (await charges(tg, account, mode, CHARGES)).sort((a, b) => a - b);
        const rate = await perSecond(tg, account, mode);
        await tg.close();
        const cell = results.get(mode) ?? { p50: [], p99: [], rate: [] };
        cell.p50.push(quantile(sorted, 0.5) * 1000);
        cell.p99.push(quantile(sorted, 0.99) * 1000);
        cell.rate.push(rate);
        results.set(mode, cell);
        console.error(`${kind} round ${round} ${mode}: p50 ${(quantile(sorted, 0.5) * 1000).toFixed(0)} µs, ${rate}/s`);
      }
    }
    await client.close();
    const runs = (values: number[]) => values.map((v) => v.toFixed(0)).join(' / ');
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
    for (const [mode, cell] of results) {
      rows.push(
        `| ${kind} | ${mode} | ${mean(cell.p50).toFixed(0)} (${runs(cell.p50)}) | ${mean(cell.p99).toFixed(0)} (${runs(cell.p99)}) | ${mean(cell.rate).toFixed(0)} (${runs(cell.rate)}) |`,
      );
    }
  }
} finally {
  await pair.stop();
}
console.log(`Charge latency, one caller, ${CHARGES} charges per cell after ${WARMUP} warm-up; ${CONCURRENT} concurrent callers for the rate. Mean (rounds).\n`);
console.log('| client | durability | p50 µs | p99 µs | charges/s, 16 callers |');
console.log('|---|---|---|---|---|');
for (const row of rows) console.log(row);
