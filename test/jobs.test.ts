// Bulk jobs and comments collections (SPEC §6), through both clients.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InvalidInputError, JobNotFoundError, type Job, type Tollgate } from '../src/index.ts';
import { CLIENT_KINDS, TEST_START, accountId, openTollgate, type TestGate } from './helpers/tollgate.ts';

const DAY = 86_400_000;
const LEASE = 60_000;

async function record(tg: Tollgate, id: string, jobId: string, times: number, result: Parameters<Tollgate['jobs']['recordResult']>[2]) {
  let last;
  for (let i = 0; i < times; i++) last = await tg.jobs.recordResult(id, jobId, result);
  return last;
}

describe.each(CLIENT_KINDS)('bulk jobs through %s', (kind) => {
  let gate: TestGate;
  let tg: Tollgate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'jobs', { leaseMs: LEASE });
    tg = gate.tg;
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START));

  async function account(plan = 'pro') {
    const id = accountId();
    await tg.accounts.create(id, { plan });
    return id;
  }
  async function reserve(id: string, videos: number, includeComments = false): Promise<Job> {
    const r = await tg.jobs.reserve(id, { videos, includeComments });
    if (!r.ok) throw new Error(`reserve refused: ${r.reason}`);
    return r.job;
  }

  it('reserves N credits upfront, 2N with include_comments', async () => {
    const id = await account();
    const plain = await reserve(id, 500);
    const withComments = await reserve(id, 100, true);
    expect([plain.reserved, withComments.reserved]).toEqual([500, 200]);
    expect(plain).toMatchObject({ status: 'queued', videos: 500, held: 500, cycleId: 1, leaseExpiresAt: gate.clock.now + LEASE });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 4300, held: 700, spent: 0 });
  });

  it('seed example: 500 resolved -> 480 ok, 15 unavailable, 5 no captions -> refund 20, net spend 480', async () => {
    const id = await account();
    const job = await reserve(id, 500);
    await record(tg, id, job.id, 480, { transcript: 'delivered' });
    await record(tg, id, job.id, 15, { transcript: 'video_unavailable' });
    const last = await record(tg, id, job.id, 5, { transcript: 'no_captions' });
    expect(last).toMatchObject({ accepted: true, job: { status: 'completed', endReason: 'completed', spent: 480, refunded: 20, held: 0, delivered: 480, failed: { videoUnavailable: 15, noCaptions: 5 } } });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 4520, spent: 480, held: 0 });
  });

  it('seed example: cancel after 100 delivered, nothing else done -> refund 400', async () => {
    const id = await account();
    const job = await reserve(id, 500);
    await record(tg, id, job.id, 100, { transcript: 'delivered' });
    const canceled = await tg.jobs.cancel(id, job.id);
    expect(canceled).toMatchObject({ ended: true, job: { status: 'canceled', spent: 100, refunded: 400, held: 0 } });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 4900, spent: 100, held: 0 });
  });

  it('cancel with comments also refunds the unused comment reservation', async () => {
    const id = await account();
    const job = await reserve(id, 500, true);
    await record(tg, id, job.id, 100, { transcript: 'delivered', commentPage: 'nonempty' });
    const { job: ended } = await tg.jobs.cancel(id, job.id);
    expect(ended).toMatchObject({ reserved: 1000, spent: 200, refunded: 800, commentPages: 100 });
  });

  it('comments: a nonempty Top page spends 1; empty or failed pages spend nothing and are refunded at the end', async () => {
    const id = await account();
    const job = await reserve(id, 4, true);
    await tg.jobs.recordResult(id, job.id, { transcript: 'delivered', commentPage: 'nonempty' });
    await tg.jobs.recordResult(id, job.id, { transcript: 'delivered', commentPage: 'empty' });
    await tg.jobs.recordResult(id, job.id, { transcript: 'delivered', commentPage: 'failed' });
    const last = await tg.jobs.recordResult(id, job.id, { transcript: 'video_unavailable' });
    expect(last).toMatchObject({ accepted: true, job: { status: 'completed', reserved: 8, spent: 4, refunded: 4, commentPages: 1, commentMisses: 2 } });
  });

  it('cancel is idempotent and free: a second cancel refunds nothing', async () => {
    const id = await account();
    const job = await reserve(id, 10);
    await tg.jobs.cancel(id, job.id);
    const again = await tg.jobs.cancel(id, job.id);
    expect(again).toMatchObject({ ended: false, job: { status: 'canceled', refunded: 10 } });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 5000, spent: 0, held: 0 });
  });

  it('after cancel, late results are refused and spend nothing', async () => {
    const id = await account();
    const job = await reserve(id, 10);
    await tg.jobs.recordResult(id, job.id, { transcript: 'delivered' });
    await tg.jobs.cancel(id, job.id);
    const late = await tg.jobs.recordResult(id, job.id, { transcript: 'delivered' });
    expect(late).toMatchObject({ accepted: false, reason: 'job_ended', job: { delivered: 1, spent: 1 } });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 4999, spent: 1, held: 0 });
  });

  it('a result after the lease ran out is refused, and the job ends with its refunds at that moment', async () => {
    const id = await account();
    const job = await reserve(id, 10);
    gate.clock.advance(LEASE - 1);
    expect((await tg.jobs.recordResult(id, job.id, { transcript: 'delivered' })).accepted).toBe(true);
    gate.clock.advance(LEASE);
    const late = await tg.jobs.recordResult(id, job.id, { transcript: 'delivered' });
    expect(late).toMatchObject({ accepted: false, reason: 'lease_expired', job: { status: 'completed', endReason: 'lease_expired', spent: 1, refunded: 9 } });
    expect((await tg.jobs.recordResult(id, job.id, { transcript: 'delivered' })).accepted).toBe(false);
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 4999, held: 0, spent: 1 });
  });

  it('every recorded result renews the lease', async () => {
    const id = await account();
    const job = await reserve(id, 10);
    for (let i = 0; i < 5; i++) {
      gate.clock.advance(LEASE - 1000);
      const r = await tg.jobs.recordResult(id, job.id, { transcript: 'delivered' });
      expect(r).toMatchObject({ accepted: true, job: { leaseExpiresAt: gate.clock.now + LEASE } });
    }
  });

  it('more results than videos are refused', async () => {
    const id = await account();
    const job = await reserve(id, 2);
    await record(tg, id, job.id, 2, { transcript: 'delivered' });
    expect(await tg.jobs.recordResult(id, job.id, { transcript: 'delivered' })).toMatchObject({ accepted: false, reason: 'job_ended', job: { delivered: 2 } });
  });

  it('the sweep finishes every job whose lease expired, with refunds, freeing the cap', async () => {
    const id = await account('starter');
    const a = await reserve(id, 10);
    await reserve(id, 20);
    expect(await tg.jobs.reserve(id, { videos: 1 })).toMatchObject({ ok: false, reason: 'job_limit_reached', active: 2, cap: 2 });
    await tg.jobs.recordResult(id, a.id, { transcript: 'delivered' });
    gate.clock.advance(LEASE);
    const swept = await tg.jobs.sweepAccount(id);
    expect(swept).toEqual({ ended: 2, nextLeaseAt: null });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 999, spent: 1, held: 0 });
    expect((await tg.jobs.get(id, a.id))).toMatchObject({ status: 'completed', endReason: 'lease_expired', refunded: 9 });
    expect((await tg.jobs.reserve(id, { videos: 1 })).ok).toBe(true);
  });

  // The deployment-wide sweep sees every account under the prefix: give it a prefix of its own.
  async function isolated<T>(run: (own: TestGate) => Promise<T>): Promise<T> {
    const own = await openTollgate(kind, 'sweep', { leaseMs: LEASE });
    try {
      return await run(own);
    } finally {
      await own.close();
    }
  }

  it('the deployment-wide sweep reclaims lapsed jobs of every account, and running it twice changes nothing', () =>
    isolated(async ({ tg, clock }) => {
      const ids = [accountId(), accountId(), accountId()];
      for (const id of ids) {
        await tg.accounts.create(id, { plan: 'pro' });
        await tg.jobs.reserve(id, { videos: 5 });
      }
      clock.advance(LEASE + 1);
      expect(await tg.jobs.sweep()).toEqual({ accounts: 3, ended: 3 });
      expect(await tg.jobs.sweep()).toEqual({ accounts: 0, ended: 0 });
      for (const id of ids) expect((await tg.usage(id)).credits).toMatchObject({ balance: 5000, held: 0 });
    }));

  it('concurrent sweeps from many servers end each lapsed job once', () =>
    isolated(async ({ tg, clock }) => {
      const ids = Array.from({ length: 8 }, () => accountId());
      for (const id of ids) {
        await tg.accounts.create(id, { plan: 'pro' });
        await tg.jobs.reserve(id, { videos: 7 });
      }
      clock.advance(LEASE);
      const results = await Promise.all(Array.from({ length: 6 }, () => tg.jobs.sweep()));
      expect(results.reduce((n, r) => n + r.ended, 0)).toBe(8);
      for (const id of ids) expect((await tg.usage(id)).credits).toMatchObject({ balance: 5000, held: 0 });
    }));

  it('the sweep keeps an account whose jobs are still leased, and comes back when the lease runs out', () =>
    isolated(async ({ tg, clock }) => {
      const id = accountId();
      await tg.accounts.create(id, { plan: 'pro' });
      const r = await tg.jobs.reserve(id, { videos: 5 });
      if (!r.ok) throw new Error(r.reason);
      clock.advance(LEASE - 10);
      await tg.jobs.recordResult(id, r.job.id, { transcript: 'delivered' });
      clock.advance(20);
      expect(await tg.jobs.sweep()).toEqual({ accounts: 1, ended: 0 });
      clock.advance(LEASE);
      expect(await tg.jobs.sweep()).toEqual({ accounts: 1, ended: 1 });
      expect(await tg.jobs.get(id, r.job.id)).toMatchObject({ status: 'completed', endReason: 'lease_expired', spent: 1, refunded: 4 });
    }));

  it('a refund to a cycle that has ended is recorded on the job and that cycle, and does not raise the current balance', async () => {
    const id = await account();
    const job = await reserve(id, 100, true);
    await record(tg, id, job.id, 30, { transcript: 'delivered', commentPage: 'nonempty' });
    gate.clock.advance(40 * DAY);
    await tg.accounts.startCycle(id);
    const fresh = await tg.usage(id);
    expect(fresh.credits).toMatchObject({ balance: 5000, held: 0, spent: 0 });
    // The lease ran out during the 40 days, so the job ended when the account was touched.
    const ended = await tg.jobs.get(id, job.id);
    expect(ended).toMatchObject({ status: 'completed', spent: 60, refunded: 140, refundedToEndedCycle: 140, cycleId: 1 });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 5000, spent: 0, held: 0 });
    const [cycle1] = await tg.accounts.endedCycles(id);
    expect(cycle1).toMatchObject({ id: 1, allowance: 5000, spent: 60, held: 0, refunded: 140, unused: 4800 });
  });

  it('results after a new cycle spend from the paying cycle; cancel refunds to it', async () => {
    const id = await account();
    const job = await reserve(id, 10);
    gate.clock.advance(LEASE / 2);
    await tg.accounts.startCycle(id);
    await record(tg, id, job.id, 3, { transcript: 'delivered' });
    const { job: ended } = await tg.jobs.cancel(id, job.id);
    expect(ended).toMatchObject({ spent: 3, refunded: 7, refundedToEndedCycle: 7 });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 5000, spent: 0, held: 0 });
    expect((await tg.accounts.endedCycles(id))[0]).toMatchObject({ spent: 3, refunded: 7, held: 0, unused: 4990 });
  });

  it('free accounts cannot create bulk jobs on api', async () => {
    const id = await account('free');
    expect(await tg.jobs.reserve(id, { videos: 1 })).toEqual({ ok: false, reason: 'plan_not_allowed', plan: 'free' });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 30, held: 0 });
  });

  it('insufficient credits are a value and reserve nothing', async () => {
    const id = await account('starter');
    expect(await tg.jobs.reserve(id, { videos: 600, includeComments: true })).toEqual({ ok: false, reason: 'insufficient', remaining: 1000, needed: 1200 });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 1000, held: 0 });
  });

  it('more videos than the plan allows per job are refused', async () => {
    const id = await account('business');
    expect(await tg.jobs.reserve(id, { videos: 5001 })).toEqual({ ok: false, reason: 'too_many_videos', max: 5000 });
  });

  it('32 concurrent creates with different keys on a cap of 2 -> exactly 2 jobs', async () => {
    const id = await account('starter');
    const outcomes = await Promise.all(Array.from({ length: 32 }, (_, i) => tg.jobs.reserve(id, { videos: 3, idempotency: { key: `k-${i}`, body: { i } } })));
    expect(outcomes.filter((o) => o.ok)).toHaveLength(2);
    expect(outcomes.filter((o) => !o.ok && o.reason === 'job_limit_reached')).toHaveLength(30);
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 994, held: 6 });
  });

  it('another account cannot read or cancel a job: not found', async () => {
    const owner = await account();
    const other = await account();
    const job = await reserve(owner, 5);
    await expect(tg.jobs.get(other, job.id)).rejects.toBeInstanceOf(JobNotFoundError);
    await expect(tg.jobs.cancel(other, job.id)).rejects.toBeInstanceOf(JobNotFoundError);
    expect((await tg.jobs.get(owner, job.id)).status).toBe('queued');
  });

  it('lists an account\'s jobs newest first with the active count', async () => {
    const id = await account();
    const a = await reserve(id, 1);
    gate.clock.advance(1);
    const b = await reserve(id, 2);
    await tg.jobs.cancel(id, a.id);
    const list = await tg.jobs.list(id);
    expect(list.total).toBe(2);
    expect(list.active).toBe(1);
    expect(list.jobs.map((j) => j.id)).toEqual([b.id, a.id]);
  });

  it('create cost does not depend on N: one script, no per-video keys', async () => {
    const id = await account('business');
    const job = await reserve(id, 5000);
    const keys = (await gate.command(['KEYS', `${gate.prefix}:{${id}}:*`])) as string[];
    expect(keys.length).toBeLessThanOrEqual(7);
    expect(job.reserved).toBe(5000);
  });
});

describe.each(CLIENT_KINDS)('comments collections through %s', (kind) => {
  let gate: TestGate;
  let tg: Tollgate;
  beforeAll(async () => {
    gate = await openTollgate(kind, 'collections', { leaseMs: LEASE });
    tg = gate.tg;
  });
  afterAll(() => gate.close());
  beforeEach(() => void gate.clock.set(TEST_START));

  it('reserves the limit L; each nonempty page takes 1; empty and failed pages take nothing; used up -> completed', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'free' });
    const r = await tg.jobs.reserveCollection(id, { limit: 3 });
    if (!r.ok) throw new Error(r.reason);
    expect(r.job).toMatchObject({ kind: 'collection', surface: 'web', limit: 3, reserved: 3 });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 27, held: 3 });
    await tg.jobs.recordPage(id, r.job.id, 'nonempty');
    await tg.jobs.recordPage(id, r.job.id, 'empty');
    await tg.jobs.recordPage(id, r.job.id, 'failed');
    await tg.jobs.recordPage(id, r.job.id, 'nonempty');
    const last = await tg.jobs.recordPage(id, r.job.id, 'nonempty');
    expect(last).toMatchObject({ accepted: true, job: { status: 'completed', endReason: 'limit_reached', spent: 3, refunded: 0, commentMisses: 2 } });
    expect(await tg.jobs.recordPage(id, r.job.id, 'nonempty')).toMatchObject({ accepted: false, reason: 'job_ended' });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 27, spent: 3, held: 0 });
  });

  it('cancel or finish refunds the unspent part of the limit', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'free' });
    const r = await tg.jobs.reserveCollection(id, { limit: 10 });
    if (!r.ok) throw new Error(r.reason);
    await tg.jobs.recordPage(id, r.job.id, 'nonempty');
    await tg.jobs.recordPage(id, r.job.id, 'nonempty');
    expect(await tg.jobs.finish(id, r.job.id)).toMatchObject({ ended: true, job: { status: 'completed', endReason: 'finished', spent: 2, refunded: 8 } });
    expect((await tg.usage(id)).credits).toMatchObject({ balance: 28, held: 0, spent: 2 });
  });

  it('a limit above the balance is insufficient; it counts toward the active-job cap', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'free' });
    expect(await tg.jobs.reserveCollection(id, { limit: 31 })).toEqual({ ok: false, reason: 'insufficient', remaining: 30, needed: 31 });
    expect((await tg.jobs.reserveCollection(id, { limit: 5 })).ok).toBe(true);
    expect(await tg.jobs.reserveCollection(id, { limit: 5 })).toMatchObject({ ok: false, reason: 'job_limit_reached', cap: 1 });
  });

  it('pages cannot be recorded on a bulk job, nor results on a collection', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'pro' });
    const bulk = await tg.jobs.reserve(id, { videos: 2 });
    const coll = await tg.jobs.reserveCollection(id, { limit: 2 });
    if (!bulk.ok || !coll.ok) throw new Error('reserve');
    await expect(tg.jobs.recordPage(id, bulk.job.id, 'nonempty')).rejects.toBeInstanceOf(InvalidInputError);
    await expect(tg.jobs.recordResult(id, coll.job.id, { transcript: 'delivered' })).rejects.toBeInstanceOf(InvalidInputError);
    expect((await tg.usage(id)).credits).toMatchObject({ spent: 0, held: 4 });
  });
});
