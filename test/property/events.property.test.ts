// Property tests of events (docs/events.md). Random charges (some retried with their
// operation id), budget holds spent, finished and cancelled (refunds), new cycles, clock moves
// past a cycle's end, plan changes, accounts.setThresholds and credit grants (granted, pending,
// voided, expiring, adjusted, refunded to) run on Redis and in memory with the same options.
// An independent oracle recomputes the events from what accounts.inspect shows after each
// step: a grant's events, and a threshold fires once when available (the cycle balance and the
// active grants') starts to meet it, re-arms (credits.restored) once it stops, and setting thresholds fires nothing; a
// replayed charge writes nothing. Redis and memory must deliver exactly the oracle's events,
// in its order, and the same type and data. A second property kills consumers in the middle
// of their batches (their handler never returns, so nothing of the batch is acknowledged) and
// checks that every event written is still handled at least once.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTollgate,
  type AccountSnapshot,
  type DeliveredEvent,
  type Grant,
  type GrantKind,
  type PlanTable,
  type Threshold,
  type Tollgate,
} from '../../src/index.ts';
import { SubjectKeys } from '../../src/redisKeys.ts';
import { usedLimit } from '../../src/rules/events.ts';
import { TEST_START, backends, accountId, openTollgate, type TestGate } from '../helpers/tollgate.ts';
import { runs, type Reached } from './harness.ts';

const DAY = 86_400_000;
type Credits = AccountSnapshot['credits'];
const LIMITS = { api: [{ limit: 100, windowMs: 60_000 }] };
const HOLDS = { cap: 2, maxItems: 8, surfaces: ['api'] };

/** Small allowances, so that thresholds are crossed and re-armed often. */
const PLANS = {
  alerts: {
    limits: LIMITS,
    credits: { allowance: 20, cycle: { days: 10 } },
    holds: HOLDS,
    events: { thresholds: [{ below: 5 }, { usedPercent: 50 }, { below: 12 }] },
  },
  tight: { limits: LIMITS, credits: { allowance: 8, cycle: { days: 10 } }, holds: HOLDS, events: { thresholds: [{ usedPercent: 75 }, { below: 0 }] } },
  quiet: { limits: LIMITS, credits: { allowance: 15, cycle: { days: 10 } }, holds: HOLDS },
} satisfies PlanTable;
type PlanName = keyof typeof PLANS;
const PLAN_NAMES = Object.keys(PLANS) as PlanName[];

/** Holds never lapse in a sequence (hold.lapsed is events.test.ts's): the clock moves at most 60 days. */
const LEASE_DAYS = 62;
const OPTIONS = { plans: PLANS, leaseMs: LEASE_DAYS * DAY, operationTtlMs: 10 * 365 * DAY } as const;

type Op =
  | { op: 'charge'; required: number; optional: number; operation: number | null }
  | { op: 'retry' }
  | { op: 'openBudget'; amount: number }
  | { op: 'spend'; hold: number; amount: number }
  | { op: 'end'; hold: number; cancel: boolean }
  | { op: 'startCycle' }
  | { op: 'advance'; days: number }
  | { op: 'changePlan'; plan: PlanName; startNow: boolean }
  | { op: 'setThresholds'; thresholds: Threshold[] | null }
  | { op: 'grant'; amount: number; kind: GrantKind; priority: number; startsIn: number; expiresIn: number | null }
  | { op: 'void'; grant: number }
  | { op: 'adjust'; amount: number }
  | { op: 'refund'; operation: number; amount: number };

const threshold: fc.Arbitrary<Threshold> = fc.oneof(
  fc.integer({ min: 0, max: 22 }).map((below) => ({ below })),
  fc.integer({ min: 1, max: 100 }).map((usedPercent) => ({ usedPercent })),
);

const ops: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      op: fc.constant('charge' as const),
      required: fc.integer({ min: 0, max: 7 }),
      optional: fc.integer({ min: 0, max: 3 }),
      operation: fc.option(fc.integer({ min: 0, max: 3 }), { freq: 2 }),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ op: 'retry' as const }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('openBudget' as const), amount: fc.integer({ min: 1, max: 12 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('spend' as const), hold: fc.nat(), amount: fc.integer({ min: 0, max: 5 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('end' as const), hold: fc.nat(), cancel: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ op: 'startCycle' as const }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('advance' as const), days: fc.integer({ min: 1, max: 25 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('changePlan' as const), plan: fc.constantFrom(...PLAN_NAMES), startNow: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('setThresholds' as const), thresholds: fc.option(fc.array(threshold, { maxLength: 3 }), { freq: 4 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('grant' as const),
      amount: fc.integer({ min: 1, max: 10 }),
      kind: fc.constantFrom<GrantKind>('paid', 'promotional', 'adjustment'),
      priority: fc.constantFrom(40, 50, 60),
      startsIn: fc.constantFrom(0, 0, 0, 2),
      expiresIn: fc.option(fc.integer({ min: 1, max: 12 }), { freq: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('void' as const), grant: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('adjust' as const), amount: fc.integer({ min: -6, max: 6 }).filter((n) => n !== 0) }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('refund' as const), operation: fc.integer({ min: 0, max: 3 }), amount: fc.integer({ min: 0, max: 4 }) }),
  },
);

/** events.expiringNoticeMs's default: a grant's notice comes 3 days before it expires. */
const NOTICE = 3 * DAY;

/** A plan's thresholds; null: it names no events. */
const planThresholds = (plan: PlanName): readonly Threshold[] | null => {
  const named: PlanTable[string] = PLANS[plan];
  return named.events?.thresholds ?? null;
};

/** An event as compared: its type and data (ids and times are each side's own). */
interface Brief {
  type: string;
  data: unknown;
}

/**
 * The oracle: which conditions held at the last check, and the events that the checks since
 * must have written, recomputed from the credits each step leaves (docs/events.md#thresholds).
 */
class Oracle {
  /** null: the account has no events. */
  thresholds: Threshold[] | null = null;
  own = false;
  /** Whether each threshold, then depletion (last), held at the last check. */
  held: boolean[] = [];
  readonly events: Brief[] = [];
  /** Thresholds that fired again after they had re-armed, in one cycle (re-arming works). */
  refired = 0;
  private readonly restoredIn = new Set<string>();

  constructor(plan: PlanName) {
    this.configure(planThresholds(plan), { balance: 0, allowance: 0, spent: 0, held: 0, nextAllowance: 0, available: 0, nextExpiry: null }, false);
  }

  /** Grants whose grant.expiring was written. */
  private readonly noticed = new Set<string>();

  private conditions(credits: Credits): boolean[] {
    const list = (this.thresholds ?? []).map((t) =>
      'below' in t ? credits.available <= t.below : credits.balance <= usedLimit(t.usedPercent, credits.allowance),
    );
    return [...list, credits.available <= 0];
  }

  /** Thresholds set (a plan's, or the account's own): what holds now is noted, nothing fires. */
  configure(thresholds: readonly Threshold[] | null, credits: Credits, own: boolean): void {
    this.own = own;
    this.thresholds = thresholds === null ? null : thresholds.map((t) => ({ ...t }));
    this.held = this.conditions(credits);
  }

  planChanged(plan: PlanName, credits: Credits): void {
    if (!this.own) this.configure(planThresholds(plan), credits, false);
  }

  /** A check after a step: fires what started to hold, re-arms what stopped. */
  check(credits: Credits, cycle: number): void {
    if (this.thresholds === null) return;
    const now = this.conditions(credits);
    const tail = { available: credits.available, cycle };
    this.thresholds.forEach((t, i) => {
      const key = `${cycle}:${JSON.stringify(t)}`;
      if (now[i] && !this.held[i]) {
        if (this.restoredIn.has(key)) this.refired++;
        this.events.push({ type: 'credits.threshold', data: { threshold: { ...t }, ...tail } });
      } else if (!now[i] && this.held[i]) {
        this.restoredIn.add(key);
        this.events.push({ type: 'credits.restored', data: { threshold: { ...t }, ...tail } });
      }
    });
    const d = now.length - 1;
    if (now[d] && !this.held[d]) this.events.push({ type: 'credits.depleted', data: { available: credits.available, cycle } });
    else if (!now[d] && this.held[d]) this.events.push({ type: 'credits.restored', data: { threshold: null, ...tail } });
    this.held = now;
  }

  /**
   * A step: cycle.started for each cycle from `from` to `to` (the last is the one inspect
   * shows), the grants it expired, voided or added (seen in inspect's grants), the check, then
   * on a sweep the grant.expiring notices now due (docs/events.md#event-types).
   */
  step(from: number, after: AccountSnapshot, before: AccountSnapshot, sweep: boolean, now: number): void {
    if (this.thresholds === null) return;
    const { cycle, credits } = after;
    for (let id = from; id <= cycle.id; id++) this.events.push({ type: 'cycle.started', data: { cycle: id } });
    if (cycle.id >= from) {
      this.events[this.events.length - 1] = {
        type: 'cycle.started',
        data: { cycle: cycle.id, start: cycle.start, end: cycle.end, allowance: credits.allowance },
      };
    }
    const was = new Map(before.grants.map((g) => [g.grantId, g.status]));
    const byNumber = (x: Grant, y: Grant) => Number(x.grantId.slice(1)) - Number(y.grantId.slice(1));
    const grants = [...after.grants].sort(byNumber);
    for (const g of grants.filter((g) => g.status === 'expired' && was.get(g.grantId) !== 'expired')) {
      this.events.push({ type: 'grant.expired', data: { grantId: g.grantId, expired: g.expired, expiresAt: g.expiresAt } });
    }
    for (const g of grants.filter((g) => g.status === 'voided' && was.get(g.grantId) !== 'voided')) {
      this.events.push({ type: 'grant.voided', data: { grantId: g.grantId, voided: g.voided } });
    }
    for (const g of grants.filter((g) => !was.has(g.grantId))) {
      this.events.push({
        type: 'grant.added',
        data: { grantId: g.grantId, kind: g.kind, amount: g.amount, effectiveAt: g.effectiveAt, expiresAt: g.expiresAt },
      });
    }
    this.check(credits, cycle.id);
    if (!sweep) return;
    for (const g of grants) {
      if (g.endedAt !== null || g.expiresAt === null || g.expiresAt - NOTICE > now || this.noticed.has(g.grantId)) continue;
      this.noticed.add(g.grantId);
      if (g.remaining > 0) this.events.push({ type: 'grant.expiring', data: { grantId: g.grantId, expiresAt: g.expiresAt, remaining: g.remaining } });
    }
  }
}

/** What the oracle checks of an event: for cycle.started of a cycle the oracle did not see, its id only. */
function asOracleSees(events: Brief[], oracle: Brief[]): Brief[] {
  return events.map((e, i) => {
    const want = oracle[i];
    if (e.type === 'cycle.started' && want?.type === 'cycle.started' && Object.keys(want.data as object).length === 1) {
      return { type: e.type, data: { cycle: (e.data as { cycle: number }).cycle } };
    }
    return e;
  });
}

/**
 * Every event the group gets from a tollgate holding `expected` of them: the consumer stops at
 * that count (or after ms). What a consumer did not get stays in the outbox.
 */
async function deliver(tg: Tollgate, group: string, expected: number, ms = 3_000): Promise<DeliveredEvent[]> {
  const seen: DeliveredEvent[] = [];
  if (expected === 0) return seen;
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), ms);
  await tg.events.consume({
    group,
    signal: stop.signal,
    handler: (event) => {
      seen.push(event);
      if (seen.length >= expected) stop.abort();
    },
  });
  clearTimeout(timer);
  return seen;
}

const brief = (e: DeliveredEvent): Brief => ({ type: e.type, data: e.data });

describe('events on Redis and in memory against an oracle of crossings', () => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate('ioredis', 'prop-events', OPTIONS);
  });
  afterAll(() => gate.close());

  it('exactly one event per crossing, none on a replay, re-armed thresholds fire again, and Redis and memory deliver the same events', async () => {
    const reached: Reached = {};
    const note = (what: string) => void (reached[what] = (reached[what] ?? 0) + 1);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...PLAN_NAMES), fc.array(ops, { minLength: 1, maxLength: 30, size: 'max' }), async (plan, steps) => {
        gate.clock.set(TEST_START);
        const subject = accountId('events');
        const memory = createTollgate({ memory: true, ...OPTIONS, clock: gate.clock.fn });
        const sides = [gate.tg, memory];
        const oracle = new Oracle(plan);
        const holds: string[] = [];
        let grants = 0;
        let last: { required: number; optional: number; operationId?: string } | undefined;
        const outbox = new SubjectKeys(gate.prefix, subject).outbox;
        const stored = async () => Number(await gate.command(['XLEN', outbox]));
        const each = async (call: (tg: Tollgate) => Promise<unknown>, where: string) => {
          const [r, m] = await Promise.all(
            sides.map((tg) =>
              call(tg).then(
                (value) => ({ value }),
                (error: Error) => ({ error: `${error.name}: ${error.message}` }),
              ),
            ),
          );
          expect(r, where).toEqual(m);
          return r as { value?: unknown; error?: string };
        };
        for (const tg of sides) await tg.accounts.create(subject, { plan });
        let state = await gate.tg.accounts.inspect(subject);
        oracle.configure(planThresholds(plan), state.credits, false);

        for (const [n, op] of steps.entries()) {
          const where = `step ${n}: ${JSON.stringify(op)}`;
          const before = state;
          let replay = false;
          switch (op.op) {
            case 'charge':
            case 'retry': {
              const charge =
                op.op === 'charge'
                  ? { required: op.required, optional: op.optional, operationId: op.operation === null ? undefined : `op-${op.operation}` }
                  : last;
              if (!charge) continue;
              last = charge;
              const length = await stored();
              const got = await each((tg) => tg.credits.charge(subject, charge), where);
              replay = (got.value as { replayed?: boolean } | undefined)?.replayed === true;
              if (replay) {
                expect(await stored(), `${where}: a replayed charge writes no event`).toBe(length);
                note(length > 0 ? 'replay_after_events' : 'replay');
              }
              break;
            }
            case 'openBudget': {
              const holdId = `h${holds.length}`;
              const got = await each((tg) => tg.holds.openBudget(subject, { holdId, amount: op.amount }), where);
              if ((got.value as { ok?: boolean }).ok) holds.push(holdId);
              break;
            }
            case 'spend':
              if (holds.length === 0) continue;
              await each((tg) => tg.holds.spend(subject, holds[op.hold % holds.length]!, { itemId: `s${n}`, amount: op.amount }), where);
              break;
            case 'end':
              if (holds.length === 0) continue;
              await each((tg) => (op.cancel ? tg.holds.cancel : tg.holds.finish).call(tg.holds, subject, holds[op.hold % holds.length]!), where);
              break;
            case 'startCycle':
              await each((tg) => tg.accounts.startCycle(subject), where);
              break;
            case 'advance':
              if (gate.clock.now + op.days * DAY >= TEST_START + (LEASE_DAYS - 2) * DAY) continue;
              // The clock moves past cycle ends; the subject's sweep rolls them over in a step of its
              // own, so each check point is a state inspect shows.
              gate.clock.advance(op.days * DAY);
              await each((tg) => tg.holds.sweepSubject(subject), where);
              break;
            case 'changePlan':
              await each((tg) => tg.accounts.changePlan(subject, op.plan, { startNewCycle: op.startNow }), where);
              break;
            case 'setThresholds':
              await each((tg) => tg.accounts.setThresholds(subject, op.thresholds), where);
              break;
            case 'grant': {
              const now = gate.clock.now;
              const request = {
                amount: op.amount,
                kind: op.kind,
                priority: op.priority,
                effectiveAt: now + op.startsIn * DAY,
                expiresAt: op.expiresIn === null ? undefined : now + (op.startsIn + op.expiresIn) * DAY,
                operationId: `grant-${n}`,
              };
              const got = await each((tg) => tg.credits.grant(subject, request), where);
              if ((got.value as { ok?: boolean } | undefined)?.ok) grants += 1;
              break;
            }
            case 'void':
              if (grants === 0) continue;
              await each((tg) => tg.credits.voidGrant(subject, `g${(op.grant % grants) + 1}`, { operationId: `void-${n}` }), where);
              break;
            case 'adjust':
              await each((tg) => tg.credits.adjust(subject, { amount: op.amount, reason: 'fix', operationId: `adjust-${n}` }), where);
              break;
            case 'refund':
              await each(
                (tg) => tg.credits.refund(subject, { charge: `op-${op.operation}`, amount: op.amount || undefined, operationId: `refund-${n}` }),
                where,
              );
              break;
          }
          state = await gate.tg.accounts.inspect(subject);
          expect(state, where).toEqual(await memory.accounts.inspect(subject));
          // What the oracle expects of the step.
          if (op.op === 'setThresholds') {
            note(op.thresholds === null ? 'thresholds_back_to_plan' : 'thresholds_own');
            if (op.thresholds === null) oracle.configure(planThresholds(state.plan.name as PlanName), state.credits, false);
            else oracle.configure(op.thresholds, state.credits, true);
            continue;
          }
          if (op.op === 'changePlan') oracle.planChanged(op.plan, before.credits);
          if (state.cycle.id !== before.cycle.id) note('cycle_started');
          oracle.step(before.cycle.id + 1, state, before, op.op === 'advance', gate.clock.now);
          if (replay) expect(state.credits, where).toEqual(before.credits);
        }

        const expected = oracle.events;
        const [fromRedis, fromMemory] = await Promise.all([deliver(gate.tg, 'p', expected.length), deliver(memory, 'p', expected.length)]);
        const where = `plan ${plan}, ${steps.length} steps`;
        expect(fromRedis.map(brief), where).toEqual(fromMemory.map(brief));
        expect(asOracleSees(fromRedis.map(brief), expected), where).toEqual(expected);
        // None beyond them: the outbox is empty once the only group handled what it got.
        expect(await stored(), `${where}: Redis wrote more events than the crossings`).toBe(0);
        expect((await memory.events.stats()).pendingSubjects, `${where}: memory wrote more events than the crossings`).toBe(0);
        expect(new Set(fromRedis.map((e) => e.id)).size).toBe(fromRedis.length);
        for (const e of expected) note(e.type);
        if (oracle.refired > 0) note('fired_again_after_restored');
      }),
      { numRuns: runs(1000) },
    );
    if (process.env.TOLLGATE_PROPERTY_STATS) console.log(reached);
    for (const rule of [
      'credits.threshold',
      'credits.depleted',
      'credits.restored',
      'cycle.started',
      'fired_again_after_restored',
      'replay_after_events',
      'cycle_started',
      'thresholds_own',
      'thresholds_back_to_plan',
      'grant.added',
      'grant.expiring',
      'grant.expired',
      'grant.voided',
    ]) {
      expect(reached[rule] ?? 0, `the generators never reached ${rule}`).toBeGreaterThan(0);
    }
  }, 600_000);
});

const DELIVERY_PLANS = {
  watched: { limits: LIMITS, credits: { allowance: 10, cycle: { days: 10 } }, holds: HOLDS, events: { thresholds: [{ below: 5 }] } },
} satisfies PlanTable;

/** A consumer that dies in the middle of a batch: its handler returns from `after` events, then never again. */
const dying = fc.record({ batchSize: fc.integer({ min: 1, max: 6 }), after: fc.integer({ min: 0, max: 6 }), retryMs: fc.constantFrom(50, 100, 30_000) });

describe.each(backends())('at-least-once delivery with consumers killed mid-batch (%s)', (kind) => {
  let gate: TestGate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'prop-delivery', { plans: DELIVERY_PLANS });
  });
  afterAll(() => gate.close());

  it('every event written is handled at least once, whichever consumers die before acknowledging', async () => {
    let killed = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }),
        fc.array(dying, { minLength: 1, maxLength: 3 }),
        async (rounds, consumers) => {
          const group = 'd';
          // Written: per round, charge to 0 (credits.threshold, credits.depleted), then a new
          // cycle (cycle.started, credits.restored twice): 5 events.
          const subjects = rounds.map(() => accountId('delivery'));
          for (const [i, subject] of subjects.entries()) {
            await gate.tg.accounts.create(subject, { plan: 'watched' });
            for (let r = 0; r < rounds[i]!; r++) {
              await gate.tg.credits.charge(subject, { required: 10 });
              await gate.tg.accounts.startCycle(subject);
            }
          }
          const count = rounds.reduce((x, y) => x + y, 0) * 5;
          const written = new Set<string>();
          if (gate.onRedis) {
            for (const subject of subjects) {
              const entries = (await gate.command(['XRANGE', new SubjectKeys(gate.prefix, subject).outbox, '-', '+'])) as [string, string[]][];
              for (const [entry] of entries) written.add(`${subject}/${entry}`);
            }
            expect(written.size).toBe(count);
          }
          const handled = new Map<string, number[]>();
          // Earlier runs' subjects are no concern of this one.
          const take = (e: DeliveredEvent) => void (subjects.includes(e.subject) && handled.set(e.id, [...(handled.get(e.id) ?? []), e.attempt]));
          for (const c of consumers) {
            const stop = new AbortController();
            let returned = 0;
            let stuck!: () => void;
            const died = new Promise<void>((resolve) => (stuck = resolve));
            void gate.tg.events.consume({
              group,
              batchSize: c.batchSize,
              retryMs: c.retryMs,
              signal: stop.signal,
              handler: async (e) => {
                if (returned === c.after) {
                  stuck();
                  killed++;
                  await new Promise(() => {});
                }
                returned++;
                take(e);
              },
            });
            await Promise.race([died, new Promise((r) => setTimeout(r, 400))]);
            stop.abort();
          }
          // A consumer that lives: after retryMs it claims what the dead ones were given.
          gate.clock.advance(1_000);
          const stop = new AbortController();
          const timer = setTimeout(() => stop.abort(), 10_000);
          await gate.tg.events.consume({
            group,
            retryMs: 100,
            signal: stop.signal,
            handler: (e) => {
              take(e);
              if (handled.size >= count && (!gate.onRedis || [...written].every((id) => handled.has(id)))) stop.abort();
            },
          });
          clearTimeout(timer);
          expect(handled.size).toBe(count);
          if (gate.onRedis) expect(new Set(handled.keys())).toEqual(written);
          // A redelivered event counts its deliveries: each handling has a higher attempt.
          for (const attempts of handled.values()) expect(attempts).toEqual([...attempts].sort((x, y) => x - y).filter((a, i, all) => all.indexOf(a) === i));
        },
      ),
      { numRuns: runs(12) },
    );
    expect(killed, 'some consumers died in the middle of a batch').toBeGreaterThan(0);
  }, 300_000);
});
