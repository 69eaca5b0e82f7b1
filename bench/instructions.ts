/**
 * Instructions Redis runs per charge and per admit + pre-check, now and before grants
 * (bench/fixtures/beforeGrants.ts), counted by valgrind's callgrind: the same count whatever
 * else the machine does, where the Redis µs of `npm run bench` move by several percent from one
 * cell to the next on a shared machine.
 *
 *   node --conditions=tollgate-source --experimental-transform-types bench/instructions.ts [grants]
 *
 * redis-server runs under callgrind counting only inside FCALL (toggle-collect=fcallCommand).
 * For each row: the bench accounts are made afresh (with `grants` live grants of priority 10
 * each, default 0: the first source pays), 3,000 warm-up calls run, the counts are zeroed, then
 * 3,000 calls are counted. Every row sends the command the library builds, as the grants
 * scenario of `npm run bench` does (bench/scenarios/grants.ts); the rows differ only in the
 * function called. Needs valgrind (Debian: valgrind).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTollgate } from '../src/index.ts';
import { admit as admitScript, charge as chargeScript } from '../src/scripts/bundle.generated.ts';
import { findFreePort, rawCommand } from '../test/helpers/redisServer.ts';
import { connect, recording } from './clients.ts';
import { BEFORE_GRANTS, loadBeforeGrants } from './fixtures/beforeGrants.ts';
import { ACCOUNTS, BENCH_PLANS, accountOf, createBenchAccounts, parallel } from './fixture.ts';

const GRANTS = Number(process.argv[2] ?? 0);
const CALLS = 3_000;

const dir = mkdtempSync(join(tmpdir(), 'tollgate-callgrind-'));
const port = await findFreePort();
const server = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    '--toggle-collect=fcallCommand',
    `--callgrind-out-file=${dir}/out`,
    'redis-server',
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ],
  { stdio: 'ignore' },
);
for (let i = 0; ; i++) {
  // redis-server under valgrind takes a few seconds to listen.
  try {
    await rawCommand(port, ['PING']);
    break;
  } catch (error) {
    if (i > 100) throw error;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
const client = await connect('ioredis', `redis://127.0.0.1:${port}`);

/** The bench accounts afresh, each with GRANTS live grants. */
async function freshAccounts(): Promise<void> {
  await client.command(['FLUSHALL']);
  const tg = createTollgate({ redis: client.tollgate, plans: BENCH_PLANS, grants: { max: 64 } });
  await createBenchAccounts(tg);
  await parallel(ACCOUNTS * GRANTS, 16, async (j) => {
    const outcome = await tg.credits.grant(accountOf(j % ACCOUNTS), { amount: 1_000_000_000, priority: 10, operationId: `g${Math.floor(j / ACCOUNTS)}` });
    if (!outcome.ok) throw new Error(`credits.grant refused: ${outcome.reason}`);
  });
}

/** Instructions per call inside FCALL over CALLS calls, from a callgrind dump. */
function counted(tag: string): number {
  const before = new Set(readdirSync(dir));
  execFileSync('callgrind_control', ['-d', tag, String(server.pid)], { stdio: 'ignore' });
  const file = readdirSync(dir).find((name) => !before.has(name));
  if (!file) throw new Error('callgrind wrote no dump');
  return Number(/^totals: (\d+)/m.exec(readFileSync(join(dir, file), 'utf8'))![1]) / CALLS;
}

try {
  await loadBeforeGrants(client);
  await freshAccounts();
  // The words the library sends for one charge and one admit + pre-check of each account.
  const words: Record<'charge' | 'admit', string[][]> = { charge: [], admit: [] };
  let last: string[] | undefined;
  const tg = createTollgate({
    redis: recording(client.tollgate, (w) => {
      if (w[0] === 'FCALL') last = w;
    }),
    plans: BENCH_PLANS,
    grants: { max: 64 },
  });
  await parallel(ACCOUNTS, 1, async (i) => {
    await tg.credits.charge(accountOf(i), { required: 1 });
    if (last?.[1] !== chargeScript.fn) throw new Error('captured no charge');
    words.charge[i] = last;
    await tg.limits.admit(accountOf(i), { credits: 1 });
    if (last?.[1] !== admitScript.fn) throw new Error('captured no admit');
    words.admit[i] = last;
  });
  // ARGV[7] of charge is its operation id (lua/charge.lua): a fresh one per call.
  const idAt = 3 + Number(words.charge[0]![2]) + 6;
  let fresh = 0;
  const run = (kind: 'charge' | 'admit', fn: string, calls: number) =>
    parallel(calls, 16, async (i) => {
      const sent = [...words[kind][i % ACCOUNTS]!];
      sent[1] = fn;
      if (kind === 'charge') sent[idAt] = `i${fresh++}`;
      const reply = (await client.tollgate.send(sent)) as unknown[];
      if (reply[0] !== 0) throw new Error(`${fn} answered ${JSON.stringify(reply)}`);
    });

  console.log(`instructions per call inside FCALL, ${CALLS.toLocaleString('en-US')} calls, accounts with ${GRANTS} grants`);
  for (const kind of ['charge', 'admit'] as const) {
    const rows: [string, string][] = [
      ['before grants', BEFORE_GRANTS[kind].fn],
      ['now', kind === 'charge' ? chargeScript.fn : admitScript.fn],
    ];
    const per: number[] = [];
    for (const [name, fn] of rows) {
      await freshAccounts();
      await run(kind, fn, CALLS);
      execFileSync('callgrind_control', ['-z', String(server.pid)], { stdio: 'ignore' });
      await run(kind, fn, CALLS);
      per.push(counted(`${kind}${per.length}`));
      console.log(`  ${kind.padEnd(6)} ${name.padEnd(13)} ${Math.round(per.at(-1)!).toLocaleString('en-US')}`);
    }
    console.log(`  ${kind.padEnd(6)} now / before  ${(per[1]! / per[0]!).toFixed(3)}×`);
  }
} finally {
  await client.close();
  await new Promise((resolve) => server.once('exit', resolve).kill());
  rmSync(dir, { recursive: true, force: true });
}
