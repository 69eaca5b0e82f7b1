/**
 * Events delivered per second by one consumer (docs/events.md#delivery): accounts whose plan
 * names a threshold are charged to 0 and given a new cycle, round after round, which writes 5
 * events a round (credits.threshold, credits.depleted, cycle.started, credits.restored twice)
 * to their outboxes; then one `events.consume` with the default batch size delivers them all to
 * a handler that does nothing, from its start to the last event. The rate is the library's
 * own cost of delivery: the index page, each outbox's read and acknowledgement.
 */
import { randomBytes } from 'node:crypto';
import { createTollgate, type PlanTable } from '../../src/index.ts';
import type { BenchClient } from '../clients.ts';
import { parallel } from '../fixture.ts';
import { resetStats, scriptStats } from '../redisInfo.ts';

const PLANS = {
  eventful: {
    limits: { api: [{ limit: 1_000, windowMs: 60_000 }] },
    credits: { allowance: 10, cycle: { days: 30 } },
    holds: { cap: 1, maxItems: 1, surfaces: ['api'] },
    events: { thresholds: [{ below: 5 }] },
  },
} satisfies PlanTable;

export interface EventsResult {
  client: string;
  subjects: number;
  events: number;
  seconds: number;
  perSecond: number;
  /** Script calls per event delivered (reads, acknowledgements, index pages). */
  scriptsPerEvent: number;
}

export async function measureEventDelivery(client: BenchClient, admin: BenchClient, subjects = 200, rounds = 5): Promise<EventsResult> {
  const tg = createTollgate({ redis: client.tollgate, plans: PLANS, prefix: `bench-events-${randomBytes(3).toString('hex')}` });
  const ids = Array.from({ length: subjects }, (_, i) => `ev_${i}`);
  await parallel(subjects, 16, async (i) => {
    const id = ids[i]!;
    await tg.accounts.create(id, { plan: 'eventful' });
    for (let r = 0; r < rounds; r++) {
      await tg.credits.charge(id, { required: 10 });
      await tg.accounts.startCycle(id);
    }
  });
  const events = subjects * rounds * 5;
  await resetStats(admin);
  let handled = 0;
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 120_000);
  const started = performance.now();
  await tg.events.consume({
    group: 'bench',
    signal: stop.signal,
    handler: () => {
      handled++;
      if (handled >= events) stop.abort();
    },
  });
  const seconds = (performance.now() - started) / 1000;
  clearTimeout(timer);
  const stats = await scriptStats(admin);
  if (handled < events) throw new Error(`events: ${handled} of ${events} delivered in ${seconds.toFixed(1)} s`);
  return { client: client.name, subjects, events, seconds, perSecond: events / seconds, scriptsPerEvent: stats.calls / events };
}
