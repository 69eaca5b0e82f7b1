// The soak's short form for CI (issue "Scale-out and faults"): `npm run soak` for a few
// seconds, as a process of its own with its own redis-server, and its figures checked here.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const SECONDS = Number(process.env.TOLLGATE_SOAK_SECONDS ?? 10);

it(`${SECONDS} s of mixed load from 2 processes under crashes, pauses, script flushes and killed connections: no acknowledged charge or settlement lost, none twice, all reconciled, every abandoned hold swept`, async () => {
  const main = fileURLToPath(new URL('./main.ts', import.meta.url));
  // A server of its own (REDIS_URL would share the test Redis, which the soak must not crash).
  const { REDIS_URL: _shared, ...env } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', main], {
    env: { ...env, SOAK_SECONDS: String(SECONDS), SOAK_PROCESSES: '2', SOAK_ACCOUNTS: '8' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));

  const line = output.split('\n').find((l) => l.startsWith('SOAK_RESULT '));
  expect(line, output).toBeDefined();
  const figures = JSON.parse(line!.slice('SOAK_RESULT '.length));
  if (process.env.TOLLGATE_FAULT_STATS) console.log(output);
  expect(figures.workerErrors, output).toEqual([]);
  expect(figures.details, output).toEqual([]);
  expect(figures).toMatchObject({ lost: 0, doubled: 0, unacknowledgedCharges: 0, unacknowledgedHolds: 0, invariantViolations: 0, accountsReconciled: 8 });
  // Abandoned holds were reclaimed: nothing stays held once their leases ran out.
  expect(figures).toMatchObject({ heldAtEnd: 0, openHoldsAtEnd: 0 });
  expect(figures.abandonedHolds).toBeGreaterThan(0);
  expect(figures.settlements).toBeGreaterThan(1_000);
  // It was a real run: load, every kind of fault, and callers that saw them.
  expect(figures.operations).toBeGreaterThan(5_000);
  for (const kind of ['crash', 'pause', 'scriptFlush', 'clientKill']) expect(figures.faultsByKind[kind], kind).toBeGreaterThan(0);
  expect(figures.unavailableCalls).toBeGreaterThan(0);
  expect(code, output).toBe(0);
}, 120_000);
