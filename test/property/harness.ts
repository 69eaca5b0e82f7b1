// Model-based testing (STYLE "Tests"): the same random operations run against Redis and
// against the reference model (src/model), and after every step the stored state must equal
// the model's and keep every credit invariant (SPEC §3, §6).
import fc from 'fast-check';
import { expect } from 'vitest';
import { fingerprint, type AccountSnapshot, type PlanTable, type Tollgate } from '../../src/index.ts';
import { accountFromSnapshot, checkInvariants, TollgateModel, type ModelAccount, type ModelJob } from '../../src/model/index.ts';
import type { ManualClock } from '../helpers/tollgate.ts';

export const LEASE_MS = 60_000;
const DAY = 86_400_000;

/** Small numbers so that limits, caps and balances are hit often. */
export const PROPERTY_PLANS: PlanTable = {
  tiny: { requestsPerMinute: 3, webRequestsPerMinute: 2, creditsPerCycle: 12, bulkJobs: false, activeJobCap: 1, maxVideosPerJob: 6, cycle: { days: 30 } },
  small: { requestsPerMinute: 5, creditsPerCycle: 25, bulkJobs: true, activeJobCap: 1, maxVideosPerJob: 8, cycle: { months: 1 } },
  roomy: { requestsPerMinute: 8, creditsPerCycle: 40, bulkJobs: true, activeJobCap: 2, maxVideosPerJob: 8, cycle: { days: 7 } },
};
const PLAN_NAMES = Object.keys(PROPERTY_PLANS);

export type Op =
  | { op: 'admit'; surface: 'api' | 'web'; credits: number }
  | { op: 'charge'; required: number; optional: number; operation: number | null }
  | { op: 'startCycle' }
  | { op: 'changePlan'; plan: string; startNow: boolean }
  | { op: 'advance'; ms: number }
  | { op: 'usage' }
  | { op: 'reserve'; videos: number; comments: boolean; key: number | null; bodyVariant: number }
  | { op: 'collection'; limit: number; key: number | null }
  | { op: 'result'; job: number; transcript: 'delivered' | 'video_unavailable' | 'no_captions'; comment: 'nonempty' | 'empty' | 'failed' }
  | { op: 'page'; job: number; page: 'nonempty' | 'empty' | 'failed' }
  | { op: 'end'; job: number; status: 'completed' | 'canceled' }
  | { op: 'sweep' }
  | { op: 'retry' };

const advance = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 90_000 }).map((ms) => ({ op: 'advance' as const, ms })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 40 }).map((d) => ({ op: 'advance' as const, ms: d * DAY })) },
);

export const coreOps: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('admit' as const), surface: fc.constantFrom('api' as const, 'web' as const), credits: fc.integer({ min: 0, max: 3 }) }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant('charge' as const), required: fc.integer({ min: 0, max: 6 }), optional: fc.integer({ min: 0, max: 3 }), operation: fc.option(fc.integer({ min: 0, max: 3 })) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'startCycle' as const }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('changePlan' as const), plan: fc.constantFrom(...PLAN_NAMES), startNow: fc.boolean() }) },
  { weight: 3, arbitrary: advance },
  { weight: 1, arbitrary: fc.constant({ op: 'usage' as const }) },
);

export const jobOps: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: coreOps },
  // Few keys and mostly one body per key, so retries of a stored outcome (replays of a job or
  // of a job-cap refusal) come up often next to reused keys with another body.
  { weight: 3, arbitrary: fc.record({ op: fc.constant('reserve' as const), videos: fc.integer({ min: 1, max: 9 }), comments: fc.boolean(), key: fc.option(fc.integer({ min: 0, max: 1 }), { freq: 3 }), bodyVariant: fc.constantFrom(0, 0, 0, 1) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('collection' as const), limit: fc.integer({ min: 1, max: 6 }), key: fc.option(fc.integer({ min: 0, max: 2 })) }) },
  { weight: 8, arbitrary: fc.record({ op: fc.constant('result' as const), job: fc.nat(), transcript: fc.constantFrom('delivered' as const, 'delivered' as const, 'video_unavailable' as const, 'no_captions' as const), comment: fc.constantFrom('nonempty' as const, 'empty' as const, 'failed' as const) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('page' as const), job: fc.nat(), page: fc.constantFrom('nonempty' as const, 'empty' as const, 'failed' as const) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('end' as const), job: fc.nat(), status: fc.constantFrom('completed' as const, 'canceled' as const) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'sweep' as const }) },
  // A client retrying its last creation as it was: replays of stored outcomes.
  { weight: 2, arbitrary: fc.constant({ op: 'retry' as const }) },
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

/** Runs one sequence on Redis and on the model, comparing after every step. */
export async function runSequence(
  tg: Tollgate,
  clock: ManualClock,
  accountId: string,
  setup: { plan: string; signupDaysAgo: number; unit: 'd' | 'm'; length: number },
  ops: Op[],
  reached?: Reached,
): Promise<void> {
  const model = new TollgateModel(PROPERTY_PLANS, { leaseMs: LEASE_MS });
  const anchor = clock.now - setup.signupDaysAgo * DAY;
  const every = setup.unit === 'd' ? { days: setup.length * 10 } : { months: setup.length };
  await tg.accounts.create(accountId, { plan: setup.plan, cycle: { anchor, every } });
  model.createAccount(accountId, setup.plan, clock.now, { anchor, unit: setup.unit, length: setup.unit === 'd' ? setup.length * 10 : setup.length });
  const jobIds: string[] = [];
  const opIds = new Map<number, string>();
  const at = (step: number, op: Op) => `step ${step}: ${JSON.stringify(op)}`;

  let lastCreation: Op | undefined;
  for (const [step, given] of ops.entries()) {
    const op = given.op === 'retry' ? lastCreation ?? given : given;
    if (op.op === 'reserve' || op.op === 'collection') lastCreation = op;
    const now = clock.now;
    const where = at(step, op);
    switch (op.op) {
      case 'admit': {
        const got = await tg.limits.admit(accountId, { surface: op.surface, credits: op.credits });
        const want = model.admit(accountId, now, op.surface, op.credits);
        expect(got.allowed, where).toBe(want.allowed);
        note(reached, got.allowed ? 'admitted' : 'rate_limited');
        expect(got.rateLimit, where).toEqual({ limit: want.limit, remaining: want.remaining, resetMs: want.resetMs });
        if (got.allowed && want.allowed && op.credits > 0) expect(got.credits?.sufficient, where).toBe(want.sufficient);
        break;
      }
      case 'charge': {
        if (op.required + op.optional === 0) break;
        const operationId = op.operation === null ? undefined : opIds.get(op.operation) ?? `op-${op.operation}-${accountId}`;
        if (operationId) opIds.set(op.operation!, operationId);
        const got = await tg.credits.charge(accountId, { required: op.required, optional: op.optional, operationId });
        const want = model.charge(accountId, now, op.required, op.optional, operationId);
        note(reached, want.ok ? (want.replayed ? 'charge_replayed' : 'charged') : 'charge_insufficient');
        if (want.ok) expect(got, where).toMatchObject({ ok: true, charged: want.charged, replayed: want.replayed });
        else expect(got, where).toEqual({ ok: false, reason: 'insufficient', remaining: want.remaining, needed: want.needed });
        break;
      }
      case 'startCycle':
        await tg.accounts.startCycle(accountId);
        model.startCycle(accountId, now);
        break;
      case 'changePlan':
        await tg.accounts.changePlan(accountId, op.plan, { startNewCycle: op.startNow });
        model.changePlan(accountId, now, op.plan, op.startNow);
        break;
      case 'advance':
        clock.advance(op.ms);
        break;
      case 'usage': {
        const got = await tg.usage(accountId);
        model.observe(accountId, now);
        const a = model.accounts.get(accountId)!;
        expect(got.credits, where).toEqual({ allowance: a.allowance, balance: a.balance, spent: a.spent, held: a.held, nextAllowance: a.nextAllowance });
        expect(got.jobs.active, where).toBe(model.activeJobs(accountId).length);
        break;
      }
      case 'reserve':
      case 'collection': {
        const jobId = `job-${jobIds.length}`;
        // A small body space, so that retries with the same key and body (replays) are frequent.
        const body = op.op === 'reserve' ? { v: op.bodyVariant } : { limit: op.limit };
        const idem = op.key === null ? undefined : { key: `key-${op.key}`, body };
        const got =
          op.op === 'reserve'
            ? await tg.jobs.reserve(accountId, { jobId, videos: op.videos, includeComments: op.comments, idempotency: idem })
            : await tg.jobs.reserveCollection(accountId, { jobId, limit: op.limit, surface: 'web', idempotency: idem });
        const want = model.reserve(accountId, now, {
          jobId,
          kind: op.op === 'reserve' ? 'bulk' : 'collection',
          surface: op.op === 'reserve' ? 'api' : 'web',
          videos: op.op === 'reserve' ? op.videos : 0,
          comments: op.op === 'reserve' && op.comments,
          limit: op.op === 'collection' ? op.limit : 0,
          idempotency: idem && { key: idem.key, fingerprint: fingerprint(body) },
        });
        note(reached, want.ok ? (want.replayed ? 'job_replayed' : 'job_created') : want.reason + (want.reason === 'job_limit_reached' && want.replayed ? '_replayed' : ''));
        if (want.ok) {
          expect(got, where).toMatchObject({ ok: true, replayed: want.replayed, job: { id: want.job.id, reserved: want.job.reserved } });
          if (!want.replayed) jobIds.push(jobId);
        } else {
          expect(got, where).toMatchObject({ ok: false, reason: want.reason });
        }
        break;
      }
      case 'result':
      case 'page':
      case 'end': {
        if (jobIds.length === 0) break;
        const jobId = jobIds[op.job % jobIds.length]!;
        const kind = model.accounts.get(accountId)!.jobs.get(jobId)!.kind;
        if (op.op === 'end') {
          const got = op.status === 'canceled' ? await tg.jobs.cancel(accountId, jobId) : await tg.jobs.finish(accountId, jobId);
          expect(got.ended, where).toBe(model.end(accountId, now, jobId, op.status));
        } else if (op.op === 'result' && kind === 'bulk') {
          const got = await tg.jobs.recordResult(accountId, jobId, { transcript: op.transcript, commentPage: op.comment });
          const want = model.recordResult(accountId, now, jobId, op.transcript, op.comment);
          note(reached, want.accepted ? 'result_accepted' : `result_${want.reason}`);
          expect(got, where).toMatchObject(want);
        } else if (op.op === 'page' && kind === 'collection') {
          const got = await tg.jobs.recordPage(accountId, jobId, op.page);
          expect(got, where).toMatchObject(model.recordPage(accountId, now, jobId, op.page));
        }
        break;
      }
      case 'retry':
        break;
      case 'sweep': {
        const got = await tg.jobs.sweepAccount(accountId);
        model.roll(accountId, now);
        expect(got.ended, where).toBe(model.expireLapsed(accountId, now));
        break;
      }
    }
    const stored = await tg.accounts.inspect(accountId);
    if (stored.cycle.id > 1) note(reached, 'new_cycle');
    if (stored.jobs.some((j) => j.refundedToEndedCycle > 0)) note(reached, 'refund_to_ended_cycle');
    if (stored.jobs.some((j) => j.endReason === 'lease_expired')) note(reached, 'lease_expired');
    expect(project(stored), where).toEqual(projectModel(model.accounts.get(accountId)!, clock.now));
    expect(checkInvariants(accountFromSnapshot(stored)), where).toEqual([]);
  }
}

/** The comparable part of a stored account. */
function project(s: AccountSnapshot) {
  return {
    plan: s.plan,
    credits: s.credits,
    cycle: s.cycle,
    cycleSpec: s.cycleSpec,
    windows: s.windows,
    ended: s.endedCycles.map(({ id, allowance, unused, spent, held, refunded, start, end }) => ({ id, allowance, unused, spent, held, refunded, start, end })),
    jobs: s.jobs
      .map((j) => ({
        id: j.id, kind: j.kind, status: j.status, reserved: j.reserved, delivered: j.delivered,
        failed: [j.failed.videoUnavailable, j.failed.noCaptions], commentPages: j.commentPages, commentMisses: j.commentMisses,
        spent: j.spent, refunded: j.refunded, refundedToEndedCycle: j.refundedToEndedCycle, cycle: j.cycleId,
        lease: j.leaseExpiresAt, finishedAt: j.finishedAt ?? 0, endReason: j.endReason ?? '',
      }))
      .sort((a, b) => a.id.localeCompare(b.id)),
  };
}

function projectModel(a: ModelAccount, now: number) {
  const window = Math.floor(now / 60_000);
  const inWindow = (w: { window: number; used: number }) => ({ window, used: w.window === window ? w.used : 0 });
  return {
    plan: a.plan,
    credits: { allowance: a.allowance, balance: a.balance, spent: a.spent, held: a.held, nextAllowance: a.nextAllowance },
    cycle: { id: a.cycle, start: a.cycleStart, end: a.cycleEnd },
    cycleSpec: { anchor: a.anchor, unit: a.unit, length: a.length },
    windows: { api: inWindow(a.windows.api), web: inWindow(a.windows.web) },
    ended: [...a.ended.entries()].sort(([x], [y]) => x - y).map(([id, c]) => ({ id, ...c })),
    jobs: [...a.jobs.values()]
      .map((j: ModelJob) => ({
        id: j.id, kind: j.kind, status: j.status, reserved: j.reserved, delivered: j.delivered,
        failed: [j.failedUnavailable, j.failedNoCaptions], commentPages: j.commentPages, commentMisses: j.commentMisses,
        spent: j.spent, refunded: j.refunded, refundedToEndedCycle: j.refundedToEndedCycle, cycle: j.cycle,
        lease: j.leaseExpiresAt, finishedAt: j.finishedAt, endReason: j.endReason,
      }))
      .sort((a, b) => a.id.localeCompare(b.id)),
  };
}

/** CI runs the counts the issues ask for; TOLLGATE_PROPERTY_RUNS asks for a longer run. */
export function runs(ciDefault: number): number {
  const asked = Number(process.env.TOLLGATE_PROPERTY_RUNS);
  return Number.isSafeInteger(asked) && asked > 0 ? asked : ciDefault;
}
