// A process that dies at a chosen point between a credit movement and the delivery of its
// events (test/faults/eventsCrash.test.ts forks it). It kills itself with SIGKILL, so nothing
// of it runs after that point: no finally, no flush, no goodbye to Redis.
//   move      charges an account so that an event is written, and dies as its library goes
//             to note the subject in the deployment-wide index (docs/events.md#delivery).
//   consume   consumes a group and dies in the middle of a batch: its handler got `stopAfter`
//             events and the next one never returns.
//   ack       consumes a group and dies after its handler returned, as its library goes to
//             acknowledge the batch.
// Every event its handler gets is reported to the parent (and confirmed written to the IPC
// channel) before the handler returns.
import { Cluster } from 'ioredis';
import { createCluster } from 'redis';
import { createTollgate, fromIoredis, fromNodeRedis, type PlanTable, type RedisScriptClient } from '../../src/index.ts';
import { ackEvents, eventsNotify } from '../../src/scripts/bundle.generated.ts';
import type { ClientKind } from '../helpers/tollgate.ts';
import { connectClient } from './support.ts';

export type CrashTarget = { url: string } | { cluster: Array<{ host: string; port: number }> };

export interface CrashConfig {
  mode: 'move' | 'consume' | 'ack';
  kind: ClientKind;
  target: CrashTarget;
  prefix: string;
  plans: PlanTable;
  /** The tollgate's clock, fixed: the parent's manual clock at the fork. */
  now: number;
  subject: string;
  /** move: what the charge takes. */
  required?: number;
  group?: string;
  batchSize?: number;
  retryMs?: number;
  /** consume: events the handler returns from before the one it never returns from. */
  stopAfter?: number;
}

export type FromCrashWorker =
  | { type: 'handled'; id: string; attempt: number }
  | { type: 'stuck'; id: string }
  | { type: 'error'; message: string };

const send = (message: FromCrashWorker) =>
  new Promise<void>((resolve, reject) => process.send!(message, undefined, {}, (error: Error | null) => (error ? reject(error) : resolve())));

const die = (): never => {
  process.kill(process.pid, 'SIGKILL');
  throw new Error('unreachable');
};

async function connect(kind: ClientKind, target: CrashTarget): Promise<RedisScriptClient> {
  if ('url' in target) return (await connectClient(kind, target.url)).adapter;
  if (kind === 'node-redis') {
    const cluster = createCluster({ rootNodes: target.cluster.map(({ host, port }) => ({ url: `redis://${host}:${port}` })) });
    cluster.on('error', () => {});
    await cluster.connect();
    return fromNodeRedis(cluster);
  }
  const cluster = new Cluster(target.cluster, { lazyConnect: true, redisOptions: { maxRetriesPerRequest: 1 } });
  cluster.on('error', () => {});
  await cluster.connect();
  return fromIoredis(cluster);
}

/** The client, with the process dying where `diesAt` says, before the command is sent. */
function dyingClient(client: RedisScriptClient, diesAt: (words: string[]) => boolean): RedisScriptClient {
  const wrapped: RedisScriptClient = { ...client, send: (words) => (diesAt(words) ? die() : client.send(words)) };
  // The adapters' optional methods are bound to their client: spreading keeps them working.
  return wrapped;
}

/** Whether the words call this script (FCALL or EVALSHA). */
const calls = (words: string[], script: { fn: string; sha1: string }) => words[1] === script.fn || words[1] === script.sha1;

async function run(config: CrashConfig): Promise<void> {
  const client = await connect(config.kind, config.target);
  const diesAt =
    config.mode === 'move'
      ? (words: string[]) => calls(words, eventsNotify)
      : config.mode === 'ack'
        ? // The acknowledgement of a batch with events in it (ARGV[3] ids, after 1 key).
          (words: string[]) => calls(words, ackEvents) && words.at(-1) !== ''
        : () => false;
  const tg = createTollgate({ plans: config.plans, redis: dyingClient(client, diesAt), prefix: config.prefix, clock: () => config.now });
  if (config.mode === 'move') {
    await tg.credits.charge(config.subject, { required: config.required ?? 0 });
    throw new Error('the charge wrote no event: no notify was sent');
  }
  let handled = 0;
  await tg.events.consume({
    group: config.group!,
    batchSize: config.batchSize,
    retryMs: config.retryMs,
    handler: async (event) => {
      if (config.mode === 'consume' && handled === config.stopAfter) {
        await send({ type: 'stuck', id: event.id });
        await new Promise(() => {});
      }
      handled++;
      await send({ type: 'handled', id: event.id, attempt: event.attempt });
    },
  });
}

process.once('message', (config: CrashConfig) => {
  run(config).catch(async (error: unknown) => {
    await send({ type: 'error', message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) }).catch(() => {});
    process.exit(1);
  });
});
