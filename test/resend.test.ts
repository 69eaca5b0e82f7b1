// A command may reach Redis twice: a caller retries after a timeout, or the client resends
// it after a reconnect (ioredis does so by default). Every credit movement must still apply
// once (SPEC §5 operation ids, SPEC §6 results, SPEC §7 creation).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTollgate, fromNodeRedis, type RedisScriptClient, type Tollgate } from '../src/index.ts';
import { connectNodeRedis, uniquePrefix } from './helpers/redis.ts';
import { ManualClock, accountId } from './helpers/tollgate.ts';

/** Sends every script twice, as a client resending an unanswered command would. */
function resendingClient(inner: RedisScriptClient): RedisScriptClient {
  return {
    evalsha: async (sha, keys, args) => {
      await inner.evalsha(sha, keys, args);
      return inner.evalsha(sha, keys, args);
    },
    eval: async (source, keys, args) => {
      await inner.eval(source, keys, args);
      return inner.eval(source, keys, args);
    },
  };
}

describe('a command that reaches Redis twice applies once', () => {
  let client: Awaited<ReturnType<typeof connectNodeRedis>>;
  let tg: Tollgate;
  let plain: Tollgate;
  beforeAll(async () => {
    client = await connectNodeRedis();
    const clock = new ManualClock();
    const prefix = uniquePrefix('resend');
    tg = createTollgate({ redis: resendingClient(fromNodeRedis(client)), prefix, clock: clock.fn });
    plain = createTollgate({ redis: fromNodeRedis(client), prefix, clock: clock.fn });
  });
  afterAll(() => client.close());

  it('a charge without an operation id is charged once, and reported as a plain charge', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'free' });
    expect(await tg.credits.charge(id, { required: 2, optional: 1 })).toEqual({ ok: true, charged: 3, balance: 27, replayed: false });
    expect((await plain.usage(id)).credits).toMatchObject({ balance: 27, spent: 3 });
  });

  it('job creation without a key returns the job it created, reserving once', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'pro' });
    const created = await tg.jobs.reserve(id, { videos: 50, includeComments: true });
    expect(created).toMatchObject({ ok: true, replayed: false, job: { reserved: 100 } });
    expect((await plain.usage(id)).credits).toMatchObject({ balance: 4900, held: 100 });
    expect((await plain.jobs.list(id)).total).toBe(1);
  });

  it('a job result without an item id counts once; so does a collection page', async () => {
    const id = accountId();
    await plain.accounts.create(id, { plan: 'pro' });
    const job = await plain.jobs.reserve(id, { videos: 3, includeComments: true });
    const coll = await plain.jobs.reserveCollection(id, { limit: 5 });
    if (!job.ok || !coll.ok) throw new Error('reserve');
    expect(await tg.jobs.recordResult(id, job.job.id, { transcript: 'delivered', commentPage: 'nonempty' })).toMatchObject({ accepted: true, replayed: false, job: { delivered: 1, spent: 2 } });
    expect(await tg.jobs.recordPage(id, coll.job.id, 'nonempty')).toMatchObject({ accepted: true, replayed: false, job: { commentPages: 1, spent: 1 } });
    expect((await plain.usage(id)).credits).toMatchObject({ spent: 3, held: 8 });
  });
});

describe('resendWindowMs: 0 keeps no ids for calls the caller gave none', () => {
  it('charges and results write no operation key or item set', async () => {
    const client = await connectNodeRedis();
    try {
      const prefix = uniquePrefix('noids');
      const tg = createTollgate({ redis: fromNodeRedis(client), prefix, clock: new ManualClock().fn, resendWindowMs: 0 });
      const id = accountId();
      await tg.accounts.create(id, { plan: 'pro' });
      await tg.credits.charge(id, { required: 1 });
      const job = await tg.jobs.reserve(id, { videos: 2 });
      if (!job.ok) throw new Error(job.reason);
      await tg.jobs.recordResult(id, job.job.id, { transcript: 'delivered' });
      await tg.jobs.recordResult(id, job.job.id, { transcript: 'delivered', itemId: 'v2' });
      const keys = (await client.keys(`${prefix}:*`)).map((k) => k.slice(k.indexOf('}:') + 2));
      expect(keys.filter((k) => k.startsWith('op:'))).toEqual([]);
      expect(await client.sMembers(`${prefix}:{${id}}:j:${job.job.id}:i`)).toEqual(['v2']);
      expect((await tg.usage(id)).credits).toMatchObject({ spent: 3, held: 0 });
    } finally {
      await client.close();
    }
  });
});

describe('item ids make a retried result count once', () => {
  let client: Awaited<ReturnType<typeof connectNodeRedis>>;
  let tg: Tollgate;
  beforeAll(async () => {
    client = await connectNodeRedis();
    tg = createTollgate({ redis: fromNodeRedis(client), prefix: uniquePrefix('items'), clock: new ManualClock().fn });
  });
  afterAll(() => client.close());

  it('the same item recorded twice is a replay that changes nothing', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'pro' });
    const job = await tg.jobs.reserve(id, { videos: 2 });
    if (!job.ok) throw new Error(job.reason);
    await tg.jobs.recordResult(id, job.job.id, { transcript: 'delivered', itemId: 'dQw4w9WgXcQ' });
    const again = await tg.jobs.recordResult(id, job.job.id, { transcript: 'delivered', itemId: 'dQw4w9WgXcQ' });
    expect(again).toMatchObject({ accepted: true, replayed: true, job: { delivered: 1, spent: 1, status: 'running' } });
  });

  it('the result that completed a job, sent again, is a replay, not a refusal', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'pro' });
    const job = await tg.jobs.reserve(id, { videos: 1 });
    if (!job.ok) throw new Error(job.reason);
    const first = await tg.jobs.recordResult(id, job.job.id, { transcript: 'no_captions', itemId: 'v1' });
    expect(first).toMatchObject({ accepted: true, job: { status: 'completed', refunded: 1 } });
    expect(await tg.jobs.recordResult(id, job.job.id, { transcript: 'no_captions', itemId: 'v1' })).toMatchObject({ accepted: true, replayed: true, job: { refunded: 1 } });
    expect(await tg.jobs.recordResult(id, job.job.id, { transcript: 'delivered', itemId: 'v2' })).toMatchObject({ accepted: false, reason: 'job_ended' });
  });

  it('a job id chosen by the caller replays its creation; reused for another request it is refused', async () => {
    const id = accountId();
    await tg.accounts.create(id, { plan: 'pro' });
    const first = await tg.jobs.reserve(id, { videos: 4, jobId: 'job_mine' });
    expect(await tg.jobs.reserve(id, { videos: 4, jobId: 'job_mine' })).toEqual({ ...first, replayed: true });
    await expect(tg.jobs.reserve(id, { videos: 5, jobId: 'job_mine' })).rejects.toThrowError('Job id "job_mine" is already taken');
    expect((await tg.usage(id)).credits.held).toBe(4);
  });
});
