// Model-based testing: the same random operations run, through the public API, against
// Redis and against the memory tollgate (the reference model, tollgate/model, behind the same
// API) with the same option objects; after every step the answers must be equal, the stored
// account must equal memory's (accounts.inspect on both), and every credit invariant must
// hold on what Redis holds.
import fc from 'fast-check';
import { expect } from 'vitest';
import {
  createTollgate,
  type BeginOutcome,
  type IssuedKey,
  type KeyInfo,
  type PlanTable,
  type PolicyTable,
  type Tollgate,
  type TollgateOptions,
} from '../../src/index.ts';
import { checkInvariants, checkSources, type Grant, type GrantRequest } from '../../src/model/index.ts';
import type { ManualClock } from '../helpers/tollgate.ts';

export const LEASE_MS = 60_000;
const DAY = 86_400_000;

/** Small numbers so that limits, caps and balances are hit often; fixed and sliding windows, one or two per surface. */
export const PROPERTY_PLANS: PlanTable = {
  tiny: {
    limits: { api: [{ limit: 3, windowMs: 60_000 }], web: [{ limit: 2, windowMs: 60_000 }] },
    credits: { allowance: 12, cycle: { days: 30 } },
    holds: { cap: 1, maxItems: 6, surfaces: ['web'] },
  },
  small: {
    limits: {
      api: [
        { limit: 5, windowMs: 60_000 },
        { limit: 2, windowMs: 1_000, algorithm: 'sliding' },
      ],
      web: [{ limit: 5, windowMs: 60_000 }],
    },
    credits: { allowance: 25, cycle: { months: 1 } },
    holds: { cap: 1, maxItems: 8, surfaces: ['api', 'web'] },
  },
  roomy: {
    limits: {
      api: [
        { limit: 8, windowMs: 10_000, algorithm: 'sliding' },
        { limit: 20, windowMs: 3_600_000 },
      ],
      web: [{ limit: 8, windowMs: 60_000 }],
    },
    credits: { allowance: 40, cycle: { days: 7 } },
    holds: { cap: 2, maxItems: 8, surfaces: ['api', 'web'] },
  },
};
const PLAN_NAMES = Object.keys(PROPERTY_PLANS);

export const PROPERTY_POLICIES: PolicyTable = {
  anon: {
    api: [
      { limit: 2, windowMs: 1_000 },
      { limit: 5, windowMs: 60_000, algorithm: 'sliding' },
    ],
  },
  login: { attempts: [{ limit: 3, windowMs: 30_000, algorithm: 'sliding' }] },
};

/**
 * The options both sides are built with. Redis keeps operation ids and Idempotency-Key
 * outcomes by its own clock, which barely moves while the tests move theirs by days, so both
 * are kept longer than any sequence lasts.
 */
export function propertyOptions(stagger: boolean) {
  return {
    plans: PROPERTY_PLANS,
    policies: PROPERTY_POLICIES,
    leaseMs: LEASE_MS,
    stagger,
    history: { days: 40 },
    operationTtlMs: 10 * 365 * DAY,
    idempotencyTtlMs: 10 * 365 * DAY,
  } as const;
}

const LABELS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r'];

export type Op =
  | { op: 'admit'; surface: 'api' | 'web' | 'nope'; cost: number; credits: number }
  | { op: 'policyAdmit'; policy: 'anon' | 'login'; cost: number }
  | { op: 'peek'; surface: 'api' | 'web' }
  | { op: 'reset'; surface: 'api' | 'web'; policy: boolean }
  | { op: 'charge'; required: number; optional: number; operation: number | null }
  | { op: 'startCycle' }
  | { op: 'changePlan'; plan: string; startNow: boolean }
  | { op: 'advance'; ms: number }
  | { op: 'usage'; surface: 'api' | 'web' }
  | { op: 'history'; days: number }
  | { op: 'open'; items: number; required: number; optional: number; surface: 'api' | 'web'; key: number | null; bodyVariant: number }
  | { op: 'openBudget'; amount: number; key: number | null }
  | { op: 'settle'; hold: number; item: number; failed: number | null; optionalSpent: number }
  | { op: 'spend'; hold: number; item: number; amount: number }
  | { op: 'end'; hold: number; cancel: boolean }
  | { op: 'renewHold'; hold: number }
  | { op: 'get'; hold: number }
  | { op: 'list' }
  | { op: 'sweep' }
  | { op: 'retry' }
  | { op: 'issueKey'; ttlMs: number | null; webOnly: boolean }
  | { op: 'verifyKey'; key: number; surface: 'api' | 'web'; cost: number; credits: number; usage: boolean; forged: boolean }
  | { op: 'revokeKey'; key: number }
  | { op: 'listKeys' }
  | { op: 'begin'; key: number; bodyVariant: number }
  | { op: 'renew' }
  | { op: 'release' }
  | { op: 'openClaimed'; items: number }
  | {
      op: 'grant';
      amount: number;
      kind: 'paid' | 'promotional' | 'adjustment' | undefined;
      priority: number | undefined;
      effectiveIn: number | null;
      lastsMs: number | null;
      operation: number;
    }
  | { op: 'retryLast' }
  | { op: 'voidGrant'; grant: number; operation: number }
  | { op: 'adjust'; amount: number; operation: number }
  | { op: 'refund'; charge: number; amount: number | null; operation: number }
  | { op: 'grants'; ended: boolean }
  | { op: 'advanceTo'; to: 'effective' | 'expiry' | 'cycleEnd' | 'lease'; which: number; offset: -1 | 0 | 1 };

const advance = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 2_500 }).map((ms) => ({ op: 'advance' as const, ms })) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 90_000 }).map((ms) => ({ op: 'advance' as const, ms })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 40 }).map((d) => ({ op: 'advance' as const, ms: d * DAY })) },
);

const surface = fc.constantFrom('api' as const, 'web' as const);

/** Windows, costs, policies, peek and reset (issue: limits for any subject). */
export const limitOps: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('admit' as const),
      surface: fc.constantFrom('api' as const, 'api' as const, 'web' as const, 'nope' as const),
      cost: fc.integer({ min: 1, max: 9 }),
      credits: fc.integer({ min: 0, max: 3 }),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('policyAdmit' as const),
      policy: fc.constantFrom('anon' as const, 'login' as const),
      cost: fc.integer({ min: 1, max: 4 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('peek' as const), surface }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reset' as const), surface, policy: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('changePlan' as const), plan: fc.constantFrom(...PLAN_NAMES), startNow: fc.boolean() }) },
  { weight: 4, arbitrary: advance },
);

/** Charges, cycles and plan changes (docs/accounts.md#billing-cycles, docs/credits.md#charges). */
export const creditOps: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('admit' as const), surface, cost: fc.constant(1), credits: fc.integer({ min: 0, max: 3 }) }) },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('charge' as const),
      required: fc.integer({ min: 0, max: 6 }),
      optional: fc.integer({ min: 0, max: 3 }),
      operation: fc.option(fc.integer({ min: 0, max: 3 })),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'startCycle' as const }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('changePlan' as const), plan: fc.constantFrom(...PLAN_NAMES), startNow: fc.boolean() }) },
  { weight: 3, arbitrary: advance },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('usage' as const), surface }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('history' as const), days: fc.integer({ min: 1, max: 40 }) }) },
);

/** Whole accounts: holds of both kinds next to everything else (docs/holds.md, docs/idempotency.md). */
export const holdOps: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: creditOps },
  // Few keys and mostly one body per key, so retries of a stored outcome (replays of a hold or
  // of a cap refusal) come up often next to reused keys with another body.
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('open' as const),
      items: fc.integer({ min: 1, max: 9 }),
      required: fc.integer({ min: 0, max: 2 }),
      optional: fc.integer({ min: 0, max: 2 }),
      surface: fc.constantFrom('api' as const, 'api' as const, 'web' as const),
      key: fc.option(fc.integer({ min: 0, max: 1 }), { freq: 3 }),
      bodyVariant: fc.constantFrom(0, 0, 0, 1),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('openBudget' as const), amount: fc.integer({ min: 1, max: 6 }), key: fc.option(fc.integer({ min: 0, max: 2 })) }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      op: fc.constant('settle' as const),
      hold: fc.nat(),
      item: fc.integer({ min: 0, max: 12 }),
      failed: fc.option(fc.integer({ min: 0, max: LABELS.length - 1 }), { freq: 2 }),
      optionalSpent: fc.integer({ min: 0, max: 3 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant('spend' as const), hold: fc.nat(), item: fc.integer({ min: 0, max: 8 }), amount: fc.integer({ min: 0, max: 3 }) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('end' as const), hold: fc.nat(), cancel: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('renewHold' as const), hold: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('get' as const), hold: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ op: 'list' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'sweep' as const }) },
  // A client retrying its last opening as it was: replays of stored outcomes.
  { weight: 2, arbitrary: fc.constant({ op: 'retry' as const }) },
);

/** API keys and Idempotency-Key claims next to admits, charges and holds. */
export const keyOps: fc.Arbitrary<Op> = fc.oneof(
  { weight: 14, arbitrary: holdOps },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('issueKey' as const), ttlMs: fc.option(fc.integer({ min: 1, max: 120_000 })), webOnly: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('verifyKey' as const),
      key: fc.nat(),
      surface,
      cost: fc.integer({ min: 1, max: 3 }),
      credits: fc.integer({ min: 0, max: 3 }),
      usage: fc.boolean(),
      forged: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('revokeKey' as const), key: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ op: 'listKeys' as const }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('begin' as const), key: fc.integer({ min: 0, max: 1 }), bodyVariant: fc.constantFrom(0, 0, 1) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'renew' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'release' as const }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('openClaimed' as const), items: fc.integer({ min: 1, max: 4 }) }) },
);

/**
 * Operation ids of grants, voids, adjustments and refunds: a small pool per kind, so replays and
 * reuses with other terms are frequent, and one id (6) all kinds share, for reuses across kinds.
 */
const otherOperation = fc.integer({ min: 0, max: 6 });

/** The operation id of a grant, void, adjustment or refund. */
function otherOperationId(kind: string, n: number): string {
  return n === 6 ? 'x-shared' : `${kind}-${n}`;
}

/**
 * Grants of every kind, pending and expiring, voids (of unknown and ended grants too),
 * adjustments either way, refunds of charges (unknown, whole, in parts, beyond what is left),
 * listings, and clock moves to exactly a grant's effectiveAt or expiresAt, a cycle's end or
 * a hold's lease (and 1 ms either side), next to charges, holds and cycle changes
 * (docs/grants.md).
 */
export const grantOps: fc.Arbitrary<Op> = fc.oneof(
  { weight: 10, arbitrary: holdOps },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('grant' as const),
      amount: fc.integer({ min: 1, max: 9 }),
      kind: fc.constantFrom('paid' as const, 'promotional' as const, 'adjustment' as const, undefined),
      priority: fc.constantFrom(0, 50, 100, undefined),
      effectiveIn: fc.option(
        fc.oneof(
          fc.integer({ min: 0, max: 90_000 }),
          fc.integer({ min: 1, max: 20 }).map((d) => d * DAY),
        ),
        { freq: 2 },
      ),
      lastsMs: fc.option(
        fc.oneof(
          fc.integer({ min: 1, max: 120_000 }),
          fc.integer({ min: 1, max: 40 }).map((d) => d * DAY),
        ),
      ),
      operation: otherOperation,
    }),
  },
  // A client retrying its last grant, void, adjustment or refund as it was: replays.
  { weight: 2, arbitrary: fc.constant({ op: 'retryLast' as const }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('voidGrant' as const), grant: fc.integer({ min: 0, max: 12 }), operation: otherOperation }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('adjust' as const),
      amount: fc.integer({ min: -8, max: 8 }).filter((n) => n !== 0),
      operation: otherOperation,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('refund' as const),
      charge: fc.integer({ min: 0, max: 4 }),
      amount: fc.option(fc.integer({ min: 1, max: 5 })),
      operation: otherOperation,
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('grants' as const), ended: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('advanceTo' as const),
      to: fc.constantFrom('effective' as const, 'expiry' as const, 'expiry' as const, 'cycleEnd' as const, 'lease' as const),
      which: fc.nat(),
      offset: fc.constantFrom(-1 as const, 0 as const, 0 as const, 1 as const),
    }),
  },
);

export const accountSetup = fc.record({
  plan: fc.constantFrom(...PLAN_NAMES),
  signupDaysAgo: fc.integer({ min: 0, max: 100 }),
  unit: fc.constantFrom('d' as const, 'm' as const),
  length: fc.integer({ min: 1, max: 3 }),
});

/** How often each rule was reached across the sequences, so a test can check its generators reach them all. */
export type Reached = Record<string, number>;

function note(reached: Reached | undefined, event: string) {
  if (reached) reached[event] = (reached[event] ?? 0) + 1;
}

type Answer = { value: unknown } | { error: string };

/** The answer of a call, or the typed error it threw (name and message), so both sides compare. */
async function answer(call: () => unknown): Promise<Answer> {
  try {
    return { value: await call() };
  } catch (error) {
    const e = error as Error;
    return { error: `${e.name}: ${e.message}` };
  }
}

/** Runs one sequence on Redis and in memory, comparing after every step. */
export async function runSequence(
  tg: Tollgate,
  clock: ManualClock,
  subject: string,
  stagger: boolean,
  setup: { plan: string; signupDaysAgo: number; unit: 'd' | 'm'; length: number },
  ops: Op[],
  reached?: Reached,
  options: Partial<TollgateOptions> = {},
): Promise<void> {
  const memory = createTollgate({ memory: true, ...propertyOptions(stagger), ...options, clock: clock.fn });
  const anchor = clock.now - setup.signupDaysAgo * DAY;
  const every = setup.unit === 'd' ? { days: setup.length * 10 } : { months: setup.length };
  const created = { plan: setup.plan, cycle: { anchor, every } };
  expect(await tg.accounts.create(subject, created)).toEqual(await memory.accounts.create(subject, created));
  const visitor = `ip:${subject}`;
  const holdIds: string[] = [];
  const opIds = new Map<number, string>();
  // Each side's own key (random secrets) and claim (random tokens), in step.
  const keys: Array<{ redis: IssuedKey; memory: IssuedKey }> = [];
  let claims: { redis: BeginOutcome; memory: BeginOutcome } | undefined;
  /** An answer with each side's key ids and claim tokens replaced by what they stand for. */
  const same = (value: unknown, side: 'redis' | 'memory'): unknown =>
    JSON.parse(
      JSON.stringify(value ?? null, (name, v) => {
        if (name === 'token') return 'token';
        if (name === 'keyId' || name === 'key') return keys.findIndex((k) => k[side].keyId === v || k[side].key === v);
        return v;
      }),
    );
  let lastOpening: Op | undefined;
  let lastGrant: GrantRequest | undefined;
  /** Per charge operation id: what its first charge took, and what refunds gave back of it since. */
  const charges = new Map<string, { charged: number; refunded: number }>();
  const grantIds: string[] = [];

  let lastOther: Op | undefined;
  for (const [step, given] of ops.entries()) {
    const op = given.op === 'retry' ? (lastOpening ?? given) : given.op === 'retryLast' ? (lastOther ?? given) : given;
    if (op.op === 'open' || op.op === 'openBudget') lastOpening = op;
    if (op.op === 'grant' || op.op === 'voidGrant' || op.op === 'adjust' || op.op === 'refund') lastOther = op;
    const where = `step ${step}: ${JSON.stringify(op)}`;
    const both = async (redis: () => unknown, reference: () => unknown): Promise<Answer> => {
      const got = await answer(redis);
      const want = await answer(reference);
      expect(got, where).toEqual(want);
      return got;
    };
    /** Both sides with answers that differ by their random ids only. */
    const alike = async (redis: () => unknown, reference: () => unknown): Promise<Answer> => {
      const got = await answer(redis);
      const want = await answer(reference);
      expect('value' in got ? { value: same(got.value, 'redis') } : got, where).toEqual('value' in want ? { value: same(want.value, 'memory') } : want);
      return got;
    };
    const holdId = (n: number) => holdIds[n % holdIds.length]!;
    switch (op.op) {
      case 'admit': {
        const options = { surface: op.surface, cost: op.cost, credits: op.credits };
        const got = await both(
          () => tg.limits.admit(subject, options),
          () => memory.limits.admit(subject, options),
        );
        if ('value' in got) {
          const a = got.value as { allowed: boolean; reason?: string; windows: unknown[]; credits?: { sufficient: boolean } };
          note(reached, a.allowed ? (a.credits?.sufficient === false ? 'admitted_short_of_credits' : 'admitted') : a.reason!);
          if (a.windows.length > 1) note(reached, a.allowed ? 'admitted_in_two_windows' : 'denied_in_two_windows');
        } else note(reached, 'unknown_surface');
        break;
      }
      case 'policyAdmit': {
        const options = { policy: op.policy, surface: op.policy === 'anon' ? 'api' : 'attempts', cost: op.cost };
        const got = await both(
          () => tg.limits.admit(visitor, options),
          () => memory.limits.admit(visitor, options),
        );
        if ('value' in got) note(reached, (got.value as { allowed: boolean }).allowed ? 'policy_admitted' : 'policy_denied');
        break;
      }
      case 'peek':
        await both(
          () => tg.limits.peek(subject, { surface: op.surface }),
          () => memory.limits.peek(subject, { surface: op.surface }),
        );
        break;
      case 'reset': {
        const [who, options] = op.policy ? [visitor, { policy: 'anon', surface: 'api' }] : [subject, { surface: op.surface }];
        await both(
          () => tg.limits.reset(who, options),
          () => memory.limits.reset(who, options),
        );
        note(reached, 'reset');
        break;
      }
      case 'charge': {
        const operationId = op.operation === null ? undefined : (opIds.get(op.operation) ?? `op-${op.operation}-${subject}`);
        if (operationId) opIds.set(op.operation!, operationId);
        const request = { required: op.required, optional: op.optional, operationId };
        const got = await both(
          () => tg.credits.charge(subject, request),
          () => memory.credits.charge(subject, request),
        );
        if ('value' in got) {
          const c = got.value as { ok: boolean; replayed?: boolean; charged?: number; sources?: unknown[] };
          note(reached, c.ok ? (c.replayed ? 'charge_replayed' : 'charged') : 'charge_insufficient');
          if (c.ok && !c.replayed && operationId) charges.set(operationId, { charged: c.charged!, refunded: 0 });
          if (c.ok && (c.sources?.length ?? 0) > 1) note(reached, 'charge_from_several_sources');
        }
        break;
      }
      case 'grant': {
        // A retry sends the same request again (its instants included).
        let request: GrantRequest;
        if (given.op !== 'retryLast' || !lastGrant) {
          const effectiveAt = op.effectiveIn === null ? undefined : clock.now + op.effectiveIn;
          request = {
            amount: op.amount,
            ...(op.kind && { kind: op.kind }),
            ...(op.priority !== undefined && { priority: op.priority }),
            ...(effectiveAt !== undefined && { effectiveAt }),
            ...(op.lastsMs !== null && { expiresAt: (effectiveAt ?? clock.now) + op.lastsMs }),
            reason: `grant ${op.amount}`,
            operationId: otherOperationId('grant', op.operation),
          };
          lastGrant = request;
        } else request = lastGrant;
        const got = await both(
          () => tg.credits.grant(subject, request),
          () => memory.credits.grant(subject, request),
        );
        if ('value' in got) {
          const g = got.value as { ok: boolean; grantId?: string; replayed?: boolean; reason?: string };
          note(reached, g.ok ? (g.replayed ? 'grant_replayed' : 'granted') : g.reason!);
          if (g.ok && !grantIds.includes(g.grantId!)) grantIds.push(g.grantId!);
        } else note(reached, 'grant_refused_as_bad_input');
        break;
      }
      case 'voidGrant': {
        // Past the grants issued: ids never issued, and once in a while the cycle.
        const id = op.grant === 12 ? 'cycle:1' : (grantIds[op.grant] ?? `g${op.grant + 1}`);
        const request = { reason: 'chargeback', operationId: otherOperationId('void', op.operation) };
        const got = await both(
          () => tg.credits.voidGrant(subject, id, request),
          () => memory.credits.voidGrant(subject, id, request),
        );
        if ('value' in got) {
          const v = got.value as { voided: number; replayed: boolean };
          note(reached, v.replayed ? 'void_replayed' : v.voided > 0 ? 'voided' : 'void_of_nothing_left');
        } else note(reached, (got as { error: string }).error.startsWith('GrantNotFoundError') ? 'void_unknown_grant' : 'void_bad_input');
        break;
      }
      case 'adjust': {
        const request = { amount: op.amount, reason: 'support', operationId: otherOperationId('adjust', op.operation) };
        const got = await both(
          () => tg.credits.adjust(subject, request),
          () => memory.credits.adjust(subject, request),
        );
        if ('value' in got) {
          const v = got.value as { ok: boolean; replayed?: boolean };
          note(reached, v.ok ? (v.replayed ? 'adjust_replayed' : op.amount > 0 ? 'adjusted_up' : 'adjusted_down') : 'adjust_insufficient');
        } else note(reached, 'adjust_bad_input');
        break;
      }
      case 'refund': {
        // Mostly a charge taken with an operation id; 4: an id never charged.
        const charged = [...charges.keys()];
        const charge = op.charge === 4 || charged.length === 0 ? `op-${op.charge}-${subject}` : charged[op.charge % charged.length]!;
        const request = {
          charge,
          ...(op.amount !== null && { amount: op.amount }),
          reason: 'failed request',
          operationId: otherOperationId('refund', op.operation),
        };
        const got = await both(
          () => tg.credits.refund(subject, request),
          () => memory.credits.refund(subject, request),
        );
        if ('value' in got) {
          const r = got.value as { ok: boolean; refunded?: number; replayed?: boolean; reason?: string };
          note(reached, r.ok ? (r.replayed ? 'refund_replayed' : 'refunded') : r.reason!);
          if (r.ok && !r.replayed) {
            // Each credit of a charge is refunded at most once.
            const record = charges.get(charge);
            expect(record, where).toBeDefined();
            record!.refunded += r.refunded!;
            expect(record!.refunded, where).toBeLessThanOrEqual(record!.charged);
          }
        } else note(reached, 'refund_bad_input');
        break;
      }
      case 'grants': {
        const got = await both(
          () => tg.credits.grants(subject, { ended: op.ended }),
          () => memory.credits.grants(subject, { ended: op.ended }),
        );
        if ('value' in got) expect(checkSources(got.value as Grant[]), where).toEqual([]);
        break;
      }
      case 'advanceTo': {
        // Read as stored (inspect moves nothing), then set the clock to exactly that instant, or 1 ms either side.
        const stored = await memory.accounts.inspect(subject);
        const instants =
          op.to === 'cycleEnd'
            ? [stored.cycle.end]
            : op.to === 'lease'
              ? stored.holds.filter((h) => h.status === 'open').map((h) => h.leaseExpiresAt)
              : stored.grants.map((g) => (op.to === 'effective' ? g.effectiveAt : g.expiresAt)).filter((t): t is number => t !== null && t > clock.now);
        const target = instants.length === 0 ? undefined : instants[op.which % instants.length]! + op.offset;
        if (target !== undefined && target > clock.now) {
          clock.set(target);
          note(reached, `advanced_to_${op.to}`);
        }
        break;
      }
      case 'startCycle':
        await both(
          () => tg.accounts.startCycle(subject),
          () => memory.accounts.startCycle(subject),
        );
        break;
      case 'changePlan': {
        const options = { startNewCycle: op.startNow };
        await both(
          () => tg.accounts.changePlan(subject, op.plan, options),
          () => memory.accounts.changePlan(subject, op.plan, options),
        );
        break;
      }
      case 'advance':
        clock.advance(op.ms);
        break;
      case 'usage':
        await both(
          () => tg.usage(subject, { surface: op.surface }),
          () => memory.usage(subject, { surface: op.surface }),
        );
        break;
      case 'history': {
        const got = await both(
          () => tg.credits.history(subject, { days: op.days }),
          () => memory.credits.history(subject, { days: op.days }),
        );
        if ('value' in got && (got.value as unknown[]).length > 1) note(reached, 'history_of_several_days');
        break;
      }
      case 'open':
      case 'openBudget': {
        const id = `h-${holdIds.length}`;
        // A small body space, so that retries with the same key and body (replays) are frequent.
        const body = op.op === 'open' ? { v: op.bodyVariant } : { amount: op.amount };
        const idempotency = op.key === null ? undefined : { key: `key-${op.key}`, body };
        const got =
          op.op === 'open'
            ? await both(
                () =>
                  tg.holds.open(subject, {
                    holdId: id,
                    items: op.items,
                    perItem: { required: op.required, optional: op.optional },
                    surface: op.surface,
                    idempotency,
                  }),
                () =>
                  memory.holds.open(subject, {
                    holdId: id,
                    items: op.items,
                    perItem: { required: op.required, optional: op.optional },
                    surface: op.surface,
                    idempotency,
                  }),
              )
            : await both(
                () => tg.holds.openBudget(subject, { holdId: id, amount: op.amount, idempotency }),
                () => memory.holds.openBudget(subject, { holdId: id, amount: op.amount, idempotency }),
              );
        if ('value' in got) {
          const o = got.value as { ok: boolean; replayed?: boolean; reason?: string; hold?: { id: string } };
          note(reached, o.ok ? (o.replayed ? 'hold_replayed' : `${op.op}_opened`) : `${o.reason}${o.replayed ? '_replayed' : ''}`);
          if (o.ok && o.hold?.id === id) holdIds.push(id);
        } else note(reached, 'open_refused_as_bad_input');
        break;
      }
      case 'settle':
      case 'spend': {
        if (holdIds.length === 0) break;
        const id = holdId(op.hold);
        const got =
          op.op === 'settle'
            ? await (async () => {
                const settlement =
                  op.failed === null ? { itemId: `i${op.item}`, optionalSpent: op.optionalSpent } : { itemId: `i${op.item}`, failed: LABELS[op.failed]! };
                return both(
                  () => tg.holds.settle(subject, id, settlement),
                  () => memory.holds.settle(subject, id, settlement),
                );
              })()
            : await both(
                () => tg.holds.spend(subject, id, { itemId: `p${op.item}`, amount: op.amount }),
                () => memory.holds.spend(subject, id, { itemId: `p${op.item}`, amount: op.amount }),
              );
        if ('value' in got) {
          const s = got.value as { accepted: boolean; replayed?: boolean; reason?: string };
          note(reached, s.accepted ? (s.replayed ? 'settle_replayed' : `${op.op}_accepted`) : `settle_${s.reason}`);
        } else note(reached, `${op.op}_bad_input`);
        break;
      }
      case 'end': {
        if (holdIds.length === 0) break;
        const id = holdId(op.hold);
        const got = op.cancel
          ? await both(
              () => tg.holds.cancel(subject, id),
              () => memory.holds.cancel(subject, id),
            )
          : await both(
              () => tg.holds.finish(subject, id),
              () => memory.holds.finish(subject, id),
            );
        if ('value' in got && !(got.value as { ended: boolean }).ended) note(reached, 'end_of_an_ended_hold');
        break;
      }
      case 'renewHold': {
        if (holdIds.length === 0) break;
        const id = holdId(op.hold);
        const got = await both(
          () => tg.holds.renew(subject, id),
          () => memory.holds.renew(subject, id),
        );
        if ('value' in got) note(reached, (got.value as { ok: boolean }).ok ? 'renew_renewed' : 'renew_ended');
        break;
      }
      case 'get':
        if (holdIds.length > 0)
          await both(
            () => tg.holds.get(subject, holdId(op.hold)),
            () => memory.holds.get(subject, holdId(op.hold)),
          );
        break;
      case 'list':
        await both(
          () => tg.holds.list(subject),
          () => memory.holds.list(subject),
        );
        break;
      case 'sweep':
        await both(
          () => tg.holds.sweepSubject(subject),
          () => memory.holds.sweepSubject(subject),
        );
        break;
      case 'retry':
      case 'retryLast':
        break;
      case 'issueKey': {
        const options = { ttlMs: op.ttlMs ?? undefined, surfaces: op.webOnly ? ['web'] : undefined };
        const redisKey = await tg.keys.issue(subject, options);
        const memoryKey = await memory.keys.issue(subject, options);
        expect([redisKey.createdAt, redisKey.expiresAt], where).toEqual([memoryKey.createdAt, memoryKey.expiresAt]);
        keys.push({ redis: redisKey, memory: memoryKey });
        note(reached, 'key_issued');
        break;
      }
      case 'verifyKey': {
        if (keys.length === 0) break;
        const pair = keys[op.key % keys.length]!;
        const forge = (key: string) => (op.forged ? `${key.slice(0, -1)}${key.endsWith('0') ? '1' : '0'}` : key);
        const options = op.usage ? { surface: op.surface, usage: true as const } : { surface: op.surface, cost: op.cost, credits: op.credits };
        const got = await alike(
          () => tg.keys.verify(forge(pair.redis.key), options as { surface: string }),
          () => memory.keys.verify(forge(pair.memory.key), options as { surface: string }),
        );
        if ('value' in got) {
          const v = got.value as { valid: boolean; reason?: string; admission?: { allowed: boolean } };
          note(reached, v.valid ? (op.usage ? 'key_usage' : v.admission!.allowed ? 'key_admitted' : 'key_denied') : `key_${v.reason}`);
        }
        break;
      }
      case 'revokeKey': {
        if (keys.length === 0) break;
        const pair = keys[op.key % keys.length]!;
        await both(
          () => tg.keys.revoke(subject, pair.redis.keyId),
          () => memory.keys.revoke(subject, pair.memory.keyId),
        );
        break;
      }
      case 'listKeys': {
        // Oldest first; keys issued in the same ms come in no given order.
        const inOrder = (list: KeyInfo[], side: 'redis' | 'memory') =>
          (same(list, side) as KeyInfo[]).sort((x, y) => x.createdAt - y.createdAt || Number(x.keyId) - Number(y.keyId));
        expect(inOrder(await tg.keys.list(subject), 'redis'), where).toEqual(inOrder(await memory.keys.list(subject), 'memory'));
        break;
      }
      case 'begin': {
        const body = { v: op.bodyVariant };
        const redisBegin = await tg.idempotency.begin(subject, `claim-${op.key}`, body);
        const memoryBegin = await memory.idempotency.begin(subject, `claim-${op.key}`, body);
        expect(same(redisBegin, 'redis'), where).toEqual(same(memoryBegin, 'memory'));
        note(reached, `begin_${redisBegin.state}`);
        if (redisBegin.state === 'new') claims = { redis: redisBegin, memory: memoryBegin };
        break;
      }
      case 'renew':
      case 'release':
      case 'openClaimed': {
        if (claims?.redis.state !== 'new' || claims.memory.state !== 'new') break;
        const [r, m] = [claims.redis.claim, claims.memory.claim];
        if (op.op === 'renew')
          await both(
            () => tg.idempotency.renew(subject, r),
            () => memory.idempotency.renew(subject, m),
          );
        else if (op.op === 'release')
          await both(
            () => tg.idempotency.release(subject, r),
            () => memory.idempotency.release(subject, m),
          );
        else {
          const id = `h-${holdIds.length}`;
          const request = (idempotency: typeof r) => ({ holdId: id, items: op.items, perItem: { required: 1 }, surface: 'web', idempotency });
          const got = await both(
            () => tg.holds.open(subject, request(r)),
            () => memory.holds.open(subject, request(m)),
          );
          if ('value' in got) {
            const o = got.value as { ok: boolean; reason?: string; hold?: { id: string } };
            note(reached, o.ok ? 'claimed_open' : `claimed_${o.reason}`);
            if (o.ok && o.hold?.id === id) holdIds.push(id);
          }
        }
        break;
      }
    }
    const stored = await tg.accounts.inspect(subject);
    if (stored.cycle.id > 1) note(reached, 'new_cycle');
    if (stored.holds.some((h) => h.refundedToEndedCycle > 0)) note(reached, 'refund_to_ended_cycle');
    if (stored.holds.some((h) => h.endReason === 'lease_expired')) note(reached, 'lease_expired');
    if (stored.grants?.some((g) => g.status === 'expired')) note(reached, 'grant_expired');
    if (stored.grants?.some((g) => g.status === 'pending')) note(reached, 'grant_pending');
    if (stored.grants?.some((g) => g.refundedAfterEnd > 0)) note(reached, 'refund_to_ended_grant');
    if (stored.holds.some((h) => h.sources?.some((x) => x.grantId.startsWith('g')))) note(reached, 'hold_from_a_grant');
    if (stored.holds.some((h) => (h.sources?.length ?? 0) > 1)) note(reached, 'hold_from_several_sources');
    expect(stored, where).toEqual(await memory.accounts.inspect(subject));
    expect(checkInvariants(stored), where).toEqual([]);
  }
}

/** CI runs the counts the issues ask for; TOLLGATE_PROPERTY_RUNS asks for a longer run. */
export function runs(ciDefault: number): number {
  const asked = Number(process.env.TOLLGATE_PROPERTY_RUNS);
  return Number.isSafeInteger(asked) && asked > 0 ? asked : ciDefault;
}
