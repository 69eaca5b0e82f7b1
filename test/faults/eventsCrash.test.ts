// Events are never lost when a process dies between the movement and the delivery
// (docs/events.md#delivery). Real processes die by SIGKILL (test/faults/eventsWorker.ts) at
// each point: (a) after the script that moved the credit and wrote the event returned, before
// the subject was noted in the deployment-wide index: the consumers' scan of the outboxes
// finds it; (b) a consumer in the middle of a batch: after retryMs another consumer claims the
// events it was given, with their attempt count; (c) a consumer after its handler succeeded,
// before it acknowledged: the event is delivered again (at least once). Both clients, on one
// server and on the cluster.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeliveredEvent, PlanTable, Tollgate } from '../../src/index.ts';
import { SubjectKeys } from '../../src/redisKeys.ts';
import { EXAMPLE_PLANS } from '../helpers/plans.ts';
import { redisUrl } from '../helpers/redis.ts';
import { CLIENT_KINDS, accountId, clusterNodes, openTollgate, type TestGate } from '../helpers/tollgate.ts';
import type { CrashConfig, CrashTarget, FromCrashWorker } from './eventsWorker.ts';

const PLANS = {
  ...EXAMPLE_PLANS,
  watched: { ...EXAMPLE_PLANS.starter, credits: { allowance: 100, cycle: { days: 30 } }, events: { thresholds: [{ below: 50 }] } },
} satisfies PlanTable;

const RETRY_MS = 300;
const WORKER = fileURLToPath(new URL('./eventsWorker.ts', import.meta.url));

interface Dead {
  /** What its handler was given and returned from. */
  handled: Array<{ id: string; attempt: number }>;
  /** The event its handler never returned from (consume mode). */
  stuck?: string;
  signal: NodeJS.Signals | null;
}

/**
 * Forks a worker and waits for its death: by its own SIGKILL (move, ack), or by ours once its
 * handler is stuck (consume).
 */
function runUntilDead(config: CrashConfig): Promise<Dead> {
  const child: ChildProcess = fork(WORKER, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const dead: Dead = { handled: [], signal: null };
  const errors: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('message', (message: FromCrashWorker) => {
      if (message.type === 'handled') dead.handled.push({ id: message.id, attempt: message.attempt });
      else if (message.type === 'error') errors.push(message.message);
      else {
        dead.stuck = message.id;
        child.kill('SIGKILL');
      }
    });
    child.once('exit', (_code, signal) => {
      clearTimeout(timer);
      dead.signal = signal;
      if (errors.length > 0) reject(new Error(`worker failed: ${errors.join('; ')}`));
      else resolve(dead);
    });
    child.send(config);
  });
}

/** Consumes the group until every id in `want` was handled (or `ms` passed). */
async function consumeUntil(tg: Tollgate, group: string, want: Set<string>, ms = 15_000): Promise<DeliveredEvent[]> {
  const seen: DeliveredEvent[] = [];
  const missing = new Set(want);
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), ms);
  await tg.events.consume({
    group,
    retryMs: RETRY_MS,
    signal: stop.signal,
    handler: (event) => {
      seen.push(event);
      missing.delete(event.id);
      if (missing.size === 0) stop.abort();
    },
  });
  clearTimeout(timer);
  return seen;
}

describe.each(CLIENT_KINDS)('events survive a process killed between the movement and the delivery (%s)', (kind) => {
  let gate: TestGate;
  let target: CrashTarget;
  beforeEach(async () => {
    gate = await openTollgate(kind, 'events-crash', { plans: PLANS });
    const nodes = clusterNodes();
    target = nodes ? { cluster: nodes.map(({ host, port }) => ({ host, port })) } : { url: redisUrl() };
  });
  afterEach(() => gate.close());

  const config = (mode: CrashConfig['mode'], subject: string, extra: Partial<CrashConfig> = {}): CrashConfig => ({
    mode,
    kind,
    target,
    prefix: gate.prefix,
    plans: PLANS,
    now: gate.clock.now,
    subject,
    ...extra,
  });
  const keys = (subject: string) => new SubjectKeys(gate.prefix, subject);
  /** Every event id the subject's outbox keeps (eventId's form: subject/entry). */
  const written = async (subject: string) =>
    new Set(((await gate.command(['XRANGE', keys(subject).outbox, '-', '+'])) as [string, string[]][]).map(([entry]) => `${subject}/${entry}`));

  it('(a) a process killed after the movement, before its notify reached the index: the scan finds the outbox and the event is delivered', async () => {
    const id = accountId('crash-a');
    await gate.tg.accounts.create(id, { plan: 'watched' });
    const dead = await runUntilDead(config('move', id, { required: 60 })); // 40 left: below 50
    expect(dead.signal).toBe('SIGKILL');
    const ids = await written(id);
    expect(ids.size, 'the movement wrote its event before the process died').toBe(1);
    expect(await gate.command(['ZSCORE', `${gate.prefix}:{events}:pending`, id]), 'the notify was lost with the process').toBeNull();
    const seen = await consumeUntil(gate.tg, 'a', ids);
    expect(seen.map((e) => [e.id, e.type, e.data])).toEqual([[[...ids][0], 'credits.threshold', { threshold: { below: 50 }, available: 40, cycle: 1 }]]);
    expect((await gate.tg.accounts.inspect(id)).credits.balance, 'the charge itself applied once').toBe(40);
  });

  it('(b) a consumer killed in the middle of a batch: after retryMs another consumer gets every event, those it was given with their attempt count', async () => {
    const id = accountId('crash-b');
    await gate.tg.accounts.create(id, { plan: 'watched' });
    for (let i = 0; i < 3; i++) {
      await gate.tg.credits.charge(id, { required: 100 }); // threshold, depleted
      await gate.tg.accounts.startCycle(id); // cycle.started, restored x2
    }
    const ids = await written(id);
    expect(ids.size).toBe(15);
    const dead = await runUntilDead(config('consume', id, { group: 'b', batchSize: 8, retryMs: RETRY_MS, stopAfter: 3 }));
    expect(dead.signal).toBe('SIGKILL');
    expect(dead.handled).toHaveLength(3);
    expect(dead.stuck).toBeDefined();
    const seen = await consumeUntil(gate.tg, 'b', ids);
    expect(new Set(seen.map((e) => e.id))).toEqual(ids);
    // The dead consumer's batch (8 events: 3 handled, 1 stuck, 4 not reached) was never
    // acknowledged: each comes again with attempt 2; the rest come once, with attempt 1.
    const given = [...ids].slice(0, 8);
    expect(dead.handled.map((h) => h.id)).toEqual(given.slice(0, 3));
    expect(dead.stuck).toBe(given[3]);
    for (const event of seen) expect([event.id, event.attempt]).toEqual([event.id, given.includes(event.id) ? 2 : 1]);
    expect(seen).toHaveLength(15);
  });

  it('(c) a consumer killed after its handler succeeded, before the acknowledgement: the events are delivered again', async () => {
    const id = accountId('crash-c');
    await gate.tg.accounts.create(id, { plan: 'watched' });
    await gate.tg.credits.charge(id, { required: 100 }); // threshold, depleted
    await gate.tg.accounts.startCycle(id); // cycle.started, restored x2
    const ids = await written(id);
    expect(ids.size).toBe(5);
    const dead = await runUntilDead(config('ack', id, { group: 'c', batchSize: 32, retryMs: RETRY_MS }));
    expect(dead.signal).toBe('SIGKILL');
    expect(new Set(dead.handled.map((h) => h.id))).toEqual(ids);
    const seen = await consumeUntil(gate.tg, 'c', ids);
    expect(seen.map((e) => [e.id, e.attempt])).toEqual([...ids].map((e) => [e, 2]));
    // Acknowledged now: the outbox has nothing left for the group.
    expect(await consumeUntil(gate.tg, 'c', new Set(['none']), RETRY_MS * 3)).toEqual([]);
  });
});
