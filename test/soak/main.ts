// The soak (issue "Scale-out and faults"): `npm run soak` forks several app-server processes
// (test/soak/worker.ts) that drive mixed load (charges with operation ids, items holds settled
// item by item, budget holds, cancels, abandoned holds for the lease sweep, plan and cycle
// changes) against shared accounts for SOAK_SECONDS, while this process injects faults into
// the redis-server it started (appendonly yes, appendfsync always): SIGKILL and restart,
// SIGSTOP longer than the timeout, SCRIPT FLUSH, CLIENT KILL of random connections. At the end
// it checks that balances, held credits and journals reconcile exactly, that every credit
// invariant holds, that no acknowledged charge or settlement was lost and none applied twice,
// and that the sweep released every abandoned hold.
//
//   SOAK_SECONDS    how long the load runs (default 60)
//   SOAK_PROCESSES  app-server processes (default 4)
//   SOAK_ACCOUNTS   shared accounts (default 12)
//   REDIS_URL       use this Redis instead of starting one (then only SCRIPT FLUSH and
//                   CLIENT KILL are injected: the server is not ours to kill)
//
// Prints the figures, then one line `SOAK_RESULT <json>`; exits 1 when any check fails.
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTollgate, type Hold } from '../../src/index.ts';
import { rawCommand, startRedisServer, type RedisServer } from '../helpers/redisServer.ts';
import { auditWorkload, type HoldTally } from '../faults/load.ts';
import { auditAccount, ChargeLedger, connectClient, readJournal, serverPid, waitUntil, type JournalEntry } from '../faults/support.ts';
import { tollgateOptions, type FromWorker, type ToWorker, type WorkerConfig, type WorkerReport } from './worker.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const PROCESSES = Number(process.env.SOAK_PROCESSES ?? 4);
const ACCOUNTS = Number(process.env.SOAK_ACCOUNTS ?? 12);
const TIMEOUT_MS = 400;
const LEASE_MS = 2_000;
const PLANS = ['business', 'pro', 'starter'];

type Fault = 'crash' | 'pause' | 'scriptFlush' | 'clientKill';

const say = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<number> {
  const started = Date.now();
  let server: RedisServer | undefined;
  let url = process.env.REDIS_URL;
  if (!url) {
    server = await startRedisServer({ appendOnly: true });
    url = server.url;
  }
  const port = Number(new URL(url).port || 6379);
  const prefix = `soak:${randomBytes(3).toString('hex')}`;
  say(`tollgate soak: ${SECONDS} s, ${PROCESSES} processes, ${ACCOUNTS} accounts, Redis ${url}${server ? ' (ours: appendonly yes, appendfsync always)' : ''}`);

  const admin = await connectClient('node-redis', url);
  const tg = createTollgate({ plans: EXAMPLE_PLANS, redis: admin.adapter, ...tollgateOptions({ prefix, timeoutMs: 5_000, leaseMs: LEASE_MS }) });
  const accounts = Array.from({ length: ACCOUNTS }, (_, i) => `acct_${i}`);
  for (const [i, id] of accounts.entries()) await tg.accounts.create(id, { plan: PLANS[i % PLANS.length]! });

  // The app servers.
  const workerPath = fileURLToPath(new URL('./worker.ts', import.meta.url));
  const children: ChildProcess[] = [];
  const reported: Promise<WorkerReport>[] = [];
  const exited: Promise<void>[] = [];
  const ready: Promise<void>[] = [];
  for (let index = 0; index < PROCESSES; index++) {
    const child = fork(workerPath, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(child);
    exited.push(new Promise((resolve) => child.once('exit', () => resolve())));
    ready.push(
      new Promise((resolve, reject) => {
        child.on('message', (message: FromWorker) => {
          if (message.type === 'ready') resolve();
        });
        child.once('exit', (code) => reject(new Error(`soak worker ${index} exited (${code}) before it started`)));
      }),
    );
    reported.push(
      new Promise((resolve, reject) => {
        child.on('message', (message: FromWorker) => {
          if (message.type === 'report') resolve(message.report);
        });
        child.once('exit', (code) => setTimeout(() => reject(new Error(`soak worker ${index} exited (${code}) without a report`)), 1_000));
      }),
    );
    const config: WorkerConfig = {
      index,
      url,
      prefix,
      accounts,
      timeoutMs: TIMEOUT_MS,
      leaseMs: LEASE_MS,
      chargeWorkers: 4,
      holdWorkers: 3,
      sweeps: index === 0,
    };
    child.send({ type: 'start', config } satisfies ToWorker);
  }
  await Promise.all(ready);

  // Faults, until the time is up.
  const faults: Record<Fault, number> = { crash: 0, pause: 0, scriptFlush: 0, clientKill: 0 };
  // In turn, so that even a short run meets each kind.
  const kinds: Fault[] = server ? ['crash', 'scriptFlush', 'clientKill', 'pause', 'clientKill', 'scriptFlush'] : ['scriptFlush', 'clientKill'];
  const deadline = Date.now() + SECONDS * 1_000;
  for (let n = 0; Date.now() < deadline; n++) {
    await sleep(Math.min(800 + Math.random() * 1_200, Math.max(0, deadline - Date.now())));
    if (Date.now() >= deadline) break;
    const fault = kinds[n % kinds.length]!;
    await inject(fault, server, port);
    faults[fault]++;
  }

  // Stop the load, collect what every caller was told.
  for (const child of children) child.send({ type: 'stop' } satisfies ToWorker);
  const reports = await Promise.all(reported);
  await Promise.all(exited);

  // Holds whose worker walked away keep credits and cap places until their lease runs out:
  // once it has, the deployment-wide sweep must release every one of them.
  await sleep(LEASE_MS + 500);
  const finalSweep = await tg.holds.sweep();

  // Audit the stored state against it.
  const ledger = new ChargeLedger();
  const holds = new Map<string, HoldTally>();
  for (const report of reports) {
    for (const [operationId, charged] of report.acknowledged) ledger.acknowledged.set(operationId, charged);
    for (const tally of report.holds) holds.set(`${tally.accountId}/${tally.holdId}`, { ...tally, trace: [] });
  }
  const journals = new Map<string, JournalEntry[]>();
  const stored = new Map<string, Hold>();
  let reconciled = 0;
  const violations: string[] = [];
  let held = 0;
  for (const id of accounts) {
    journals.set(id, await readJournal(admin.command, prefix, id));
    const audit = await auditAccount(tg, id);
    if (audit.reconciles) reconciled++;
    else violations.push(`${id}: the journal does not reconcile with balance, spent and held`);
    for (const v of audit.violations) violations.push(`${id}: ${v.rule} (${v.detail})`);
    for (const hold of audit.snapshot.holds) stored.set(`${id}/${hold.id}`, hold);
    held += audit.snapshot.credits.held;
  }
  const result = auditWorkload({ ledger, holds }, journals, stored);
  await admin.close();

  const sum = (pick: (r: WorkerReport) => number) => reports.reduce((total, r) => total + pick(r), 0);
  const figures = {
    seconds: SECONDS,
    processes: PROCESSES,
    accounts: ACCOUNTS,
    operations: sum((r) => r.figures.operations),
    charges: sum((r) => r.figures.charges),
    settlements: sum((r) => r.figures.settlements),
    holdsOpened: sum((r) => r.figures.holdsOpened),
    cancels: sum((r) => r.figures.cancels),
    abandonedHolds: sum((r) => r.figures.abandoned),
    sweptHolds: sum((r) => r.figures.swept) + finalSweep.ended,
    holdsEndedByLease: [...stored.values()].filter((hold) => hold.endReason === 'lease_expired').length,
    cycleChanges: sum((r) => r.figures.cycleChanges),
    faults: Object.values(faults).reduce((a, b) => a + b, 0),
    faultsByKind: faults,
    unavailableCalls: sum((r) => r.figures.unavailable),
    retriedWithSameOperationId: sum((r) => r.figures.retries),
    appliedDespiteError: sum((r) => r.figures.appliedDespiteError),
    settlementsAppliedDespiteError: sum((r) => r.figures.settlementsAppliedDespiteError),
    acknowledgedCharges: result.acknowledgedCharges,
    lost: result.lost,
    doubled: result.doubled,
    unacknowledgedCharges: result.unacknowledged,
    unacknowledgedHolds: result.unacknowledgedHolds,
    accountsReconciled: reconciled,
    heldAtEnd: held,
    openHoldsAtEnd: [...stored.values()].filter((hold) => hold.status === 'open').length,
    invariantViolations: violations.length,
    workerErrors: reports.flatMap((r) => r.errors),
    details: [...result.details, ...violations].slice(0, 20),
    elapsedSeconds: Math.round((Date.now() - started) / 1000),
  };
  say(
    `operations under load: ${figures.operations} (${figures.charges} charges, ${figures.settlements} settlements, ${figures.holdsOpened} holds opened, ${figures.cancels} cancels, ${figures.abandonedHolds} holds abandoned, ${figures.holdsEndedByLease} ended by their lease (${figures.sweptHolds} by the sweep), ${figures.cycleChanges} plan or cycle changes)`,
  );
  say(
    `faults injected: ${figures.faults} (${Object.entries(faults)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}); calls that failed with StoreUnavailableError: ${figures.unavailableCalls}`,
  );
  say(
    `acknowledged charges: ${figures.acknowledgedCharges}; charges or settlements lost: ${figures.lost}; applied twice: ${figures.doubled}; charges no caller was told of: ${figures.unacknowledgedCharges}; holds no caller was told of: ${figures.unacknowledgedHolds}`,
  );
  say(
    `charges retried with their operation id: ${figures.retriedWithSameOperationId} (${figures.appliedDespiteError} had run despite the error); settlements that had run despite the error, replayed by their item id: ${figures.settlementsAppliedDespiteError}`,
  );
  say(
    `accounts whose journal reconciles: ${reconciled}/${ACCOUNTS}; after the final sweep: ${figures.openHoldsAtEnd} open holds, ${held} credits held; invariant violations: ${violations.length}; worker errors: ${figures.workerErrors.length}`,
  );
  for (const line of figures.details) say(`  ${line}`);
  say(`SOAK_RESULT ${JSON.stringify(figures)}`);

  if (server) await server.stop();
  const ok =
    result.lost === 0 &&
    result.doubled === 0 &&
    result.unacknowledged === 0 &&
    result.unacknowledgedHolds === 0 &&
    reconciled === ACCOUNTS &&
    violations.length === 0 &&
    held === 0 &&
    figures.openHoldsAtEnd === 0 &&
    figures.workerErrors.length === 0;
  say(ok ? 'soak: OK' : 'soak: FAILED');
  return ok ? 0 : 1;
}

/** One fault; returns once the server answers again. */
async function inject(fault: Fault, server: RedisServer | undefined, port: number): Promise<void> {
  switch (fault) {
    case 'crash':
      await server!.kill('SIGKILL');
      await server!.restart();
      return;
    case 'pause': {
      const pid = await serverPid(port);
      process.kill(pid, 'SIGSTOP');
      await sleep(TIMEOUT_MS + 300);
      process.kill(pid, 'SIGCONT');
      return;
    }
    case 'scriptFlush':
      await rawCommand(port, ['SCRIPT', 'FLUSH']);
      return;
    case 'clientKill': {
      // Two of the app servers' connections, cut wherever their commands are.
      const list = String(await rawCommand(port, ['CLIENT', 'LIST', 'TYPE', 'normal']));
      const ids = list
        .split('\n')
        .filter((line) => line.includes('id=') && !line.includes('cmd=client|list'))
        .map((line) => /id=(\d+)/.exec(line)![1]!);
      for (let i = 0; i < 2 && ids.length > 0; i++) {
        const [id] = ids.splice(Math.floor(Math.random() * ids.length), 1);
        await rawCommand(port, ['CLIENT', 'KILL', 'ID', id!]);
      }
      await waitUntil('the server to answer', async () => (await rawCommand(port, ['PING'])) === 'PONG');
      return;
    }
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('soak:', error);
    process.exit(1);
  },
);
