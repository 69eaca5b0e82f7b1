// One app server of the soak (test/soak/main.ts forks several): two tollgates, on a node-redis
// and an ioredis client, drive the mixed load of test/faults/load.ts (charges, items and budget
// holds) against the shared accounts until told to stop, then report everything their
// callers were told.
import { createTollgate, type Tollgate } from '../../src/index.ts';
import type { ClientKind, TestClient } from '../helpers/tollgate.ts';
import { Workload, type HoldTally, type LoadFigures } from '../faults/load.ts';
import { connectClient, untilAnswered } from '../faults/support.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';

export interface WorkerConfig {
  index: number;
  url: string;
  prefix: string;
  accounts: string[];
  timeoutMs: number;
  leaseMs: number;
  chargeWorkers: number;
  holdWorkers: number;
  /** This process also runs the deployment-wide lease sweep every second. */
  sweeps: boolean;
}

export interface WorkerReport {
  index: number;
  acknowledged: Array<[string, number]>;
  holds: Array<Omit<HoldTally, 'trace'>>;
  figures: LoadFigures & { retries: number; appliedDespiteError: number; sweeps: number; swept: number };
  errors: string[];
}

export type ToWorker = { type: 'start'; config: WorkerConfig } | { type: 'stop' };
export type FromWorker = { type: 'ready'; index: number } | { type: 'report'; report: WorkerReport };

export const tollgateOptions = (config: Pick<WorkerConfig, 'prefix' | 'timeoutMs' | 'leaseMs'>) => ({
  prefix: config.prefix,
  timeoutMs: config.timeoutMs,
  leaseMs: config.leaseMs,
  // Every movement of the run stays in the journal, so the audit can account for each one.
  journal: { maxEntries: 10_000_000 },
});

const send = (message: FromWorker) =>
  new Promise<void>((resolve, reject) => process.send!(message, undefined, {}, (error: Error | null) => (error ? reject(error) : resolve())));
// helpers/tollgate.ts needs a vitest run; this process is a plain Node one.
const KINDS: ClientKind[] = ['node-redis', 'ioredis'];

async function run(config: WorkerConfig): Promise<void> {
  const clients: TestClient[] = await Promise.all(KINDS.map((kind) => connectClient(kind, config.url)));
  const gates: Tollgate[] = clients.map((client) => createTollgate({ plans: EXAMPLE_PLANS, redis: client.adapter, ...tollgateOptions(config) }));
  const load = new Workload({
    gates,
    accounts: config.accounts,
    chargeWorkers: config.chargeWorkers,
    holdWorkers: config.holdWorkers,
    cycleChanges: true,
    abandonHolds: true,
    tag: `p${config.index}`,
  });
  let sweeping = config.sweeps;
  let sweeps = 0;
  let swept = 0;
  const sweeper = (async () => {
    while (sweeping) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const { value } = await untilAnswered(() => gates[sweeps % gates.length]!.holds.sweep());
      sweeps++;
      swept += value.ended;
    }
  })().catch((error: unknown) => load.errors.push(error));

  await new Promise<void>((resolve) => {
    process.on('message', (message: ToWorker) => {
      if (message.type === 'stop') resolve();
    });
    load.start();
    void send({ type: 'ready', index: config.index });
  });
  sweeping = false;
  await load.stop();
  await sweeper;
  // Closing waits for every command still queued, so the audit sees their effects.
  await Promise.all(clients.map((client) => client.close()));

  await send({
    type: 'report',
    report: {
      index: config.index,
      acknowledged: [...load.ledger.acknowledged.entries()],
      holds: [...load.holds.values()].map(({ trace: _trace, ...tally }) => tally),
      figures: { ...load.figures, retries: load.ledger.retries, appliedDespiteError: load.ledger.appliedDespiteError, sweeps, swept },
      errors: load.errors.map((error) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error))),
    },
  });
}

process.once('message', (message: ToWorker) => {
  if (message.type !== 'start') return;
  run(message.config).then(
    () => process.disconnect(),
    (error: unknown) => {
      console.error(`soak worker ${message.config.index}:`, error);
      process.exit(1);
    },
  );
});
