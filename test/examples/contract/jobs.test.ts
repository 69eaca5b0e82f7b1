// Bulk jobs over real HTTP, against both example servers (WORKER=manual, items
// processed through POST /admin/jobs/:id/process): the seed examples, cancel, refunds to an
// ended cycle, the lease sweep, the job body, the POST /jobs order, idempotency and bad input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADAPTERS, type Harness, startHarness, videoIds } from './harness.ts';

describe.each(ADAPTERS)('$name server: jobs contract', (adapter) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(adapter, 'jobs');
  });
  afterAll(async () => {
    await h?.close();
  });

  const credits = async (id: string) => (await h.service.tollgate.usage(id)).credits;
  const createJob = (key: string, body: unknown, headers: Record<string, string> = {}) => h.request('/jobs', { key, body, headers });
  const process = (jobId: string, count: number) => h.admin(`/admin/jobs/${jobId}/process`, { count });

  describe('seed examples', () => {
    it('500 resolved -> -500; 480 ok, 15 unavailable, 5 no captions -> refund 20, net spend 480', async () => {
      const { id, key } = await h.account('starter');
      const ids = [...videoIds('vid', 480), ...videoIds('unavail', 15), ...videoIds('nocapt', 5)];
      const created = await createJob(key, { video_ids: ids });
      expect(created.status).toBe(201);
      expect(created.headers.get('location')).toBe(`/jobs/${created.body.id}`);
      expect(created.body).toMatchObject({ status: 'queued', videos: 500, reserved: 500, spent: 0, refunded: 0 });
      expect(await credits(id)).toMatchObject({ balance: 500, held: 500 });

      const processed = await process(created.body.id, 1000);
      expect(processed.status).toBe(200);
      expect(processed.body.processed).toBe(500);
      const job = (await h.request(`/jobs/${created.body.id}`, { key })).body;
      expect(job).toMatchObject({
        status: 'completed',
        delivered: 480,
        failed: { video_unavailable: 15, no_captions: 5 },
        spent: 480,
        refunded: 20,
        refunded_to_ended_cycle: 0,
      });
      expect(job.finished_at).toEqual(expect.any(String));
      expect(await credits(id)).toMatchObject({ balance: 520, spent: 480, held: 0 });
    });

    it('cancel after 100 delivered refunds the other 400; a second cancel refunds nothing; late results are refused', async () => {
      const { id, key } = await h.account('starter');
      const created = await createJob(key, { video_ids: videoIds('vid', 500) });
      await process(created.body.id, 100);
      const canceled = await h.request(`/jobs/${created.body.id}`, { key, method: 'DELETE' });
      expect(canceled.status).toBe(200);
      expect(canceled.body).toMatchObject({ status: 'canceled', delivered: 100, spent: 100, refunded: 400 });
      expect(await credits(id)).toMatchObject({ balance: 900, held: 0 });
      const again = await h.request(`/jobs/${created.body.id}`, { key, method: 'DELETE' });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ status: 'canceled', refunded: 400 });
      const late = await process(created.body.id, 5);
      expect(late.body.processed).toBe(0);
      expect(await credits(id)).toMatchObject({ balance: 900, spent: 100 });
    });

    it('with include_comments: 2N reserved; cancel refunds the unused comment reservation as well', async () => {
      const { id, key } = await h.account('starter');
      const created = await createJob(key, { video_ids: videoIds('vid', 400), include_comments: true });
      expect(created.body).toMatchObject({ reserved: 800, include_comments: true });
      await process(created.body.id, 100);
      const canceled = await h.request(`/jobs/${created.body.id}`, { key, method: 'DELETE' });
      expect(canceled.body).toMatchObject({ delivered: 100, comment_pages: 100, spent: 200, refunded: 600 });
      expect((await credits(id)).balance).toBe(800);
    });

    it('comments: a nonempty Top page spends 1, empty or failed pages spend nothing and are refunded', async () => {
      const { id, key } = await h.account('starter');
      const ids = [...videoIds('vid', 2), ...videoIds('nocomm', 2), ...videoIds('errcomm', 2), ...videoIds('unavail', 1)];
      const created = await createJob(key, { video_ids: ids, include_comments: true });
      expect(created.body.reserved).toBe(14);
      await process(created.body.id, 10);
      const job = (await h.request(`/jobs/${created.body.id}`, { key })).body;
      expect(job).toMatchObject({ status: 'completed', delivered: 6, comment_pages: 2, spent: 8, refunded: 6 });
      expect(await credits(id)).toMatchObject({ balance: 992, held: 0 });
      const results = await h.request(`/jobs/${created.body.id}/results`, { key });
      expect(results.body.total).toBe(7);
      const byVideo = Object.fromEntries(results.body.results.map((r: any) => [r.video_id, r]));
      expect(byVideo[ids[0]!].comments.page.comments).toHaveLength(20);
      expect(byVideo[ids[2]!].comments.status).toBe('empty');
      expect(byVideo[ids[4]!].comments.status).toBe('failed');
      expect(byVideo[ids[6]!].transcript.status).toBe('video_unavailable');
    });

    it('a channel or playlist resolves to its videos: N reserved', async () => {
      const { key } = await h.account('pro');
      const listing = await h.request(`/api/v1/channels/UC${'c'.repeat(22)}/videos`, { key });
      const created = await createJob(key, { channel_id: `UC${'c'.repeat(22)}` });
      expect(created.status).toBe(201);
      expect(created.body.videos).toBe(listing.body.count);
      const playlist = await createJob(key, { playlist_id: `PL${'p'.repeat(18)}` });
      expect(playlist.status).toBe(201);
    });
  });

  describe('job reads', () => {
    it('the job body has exactly the documented fields; reads and exports are free', async () => {
      const { id, key } = await h.account('starter');
      const created = await createJob(key, { video_ids: videoIds('vid', 3) });
      expect(Object.keys(created.body).sort()).toEqual(
        [
          'id',
          'status',
          'videos',
          'include_comments',
          'reserved',
          'delivered',
          'failed',
          'comment_pages',
          'spent',
          'refunded',
          'refunded_to_ended_cycle',
          'cycle_id',
          'created_at',
          'finished_at',
        ].sort(),
      );
      expect(created.body).toMatchObject({ include_comments: false, failed: { video_unavailable: 0, no_captions: 0 }, cycle_id: 1, finished_at: null });
      expect(created.body.created_at).toBe(new Date(h.clock.now).toISOString());
      await process(created.body.id, 3);
      const before = await credits(id);
      const list = await h.request('/jobs', { key });
      expect(list.status).toBe(200);
      expect(list.body.jobs.map((j: any) => j.id)).toContain(created.body.id);
      const results = await h.request(`/jobs/${created.body.id}/results`, { key });
      expect(results.status).toBe(200);
      expect(results.body.results).toHaveLength(3);
      expect(results.body.results[0].transcript.segments.length).toBeGreaterThan(0);
      expect(results.headers.get('x-ratelimit-limit')).toBe('100');
      expect(await credits(id)).toEqual(before);
    });

    it("another account's job is 404 for read, export and cancel, and stays untouched", async () => {
      const owner = await h.account('starter');
      const other = await h.account('starter');
      const created = await createJob(owner.key, { video_ids: videoIds('vid', 5) });
      for (const [path, method] of [
        [`/jobs/${created.body.id}`, 'GET'],
        [`/jobs/${created.body.id}/results`, 'GET'],
        [`/jobs/${created.body.id}`, 'DELETE'],
      ] as const) {
        const r = await h.request(path, { key: other.key, method });
        expect(r.status).toBe(404);
        expect(r.body.error.type).toBe('not_found');
      }
      expect((await h.request(`/jobs/${created.body.id}`, { key: owner.key })).body.status).toBe('queued');
    });
  });

  describe('POST /jobs rules', () => {
    it('Free accounts get 403 plan_not_allowed and nothing is reserved', async () => {
      const { id, key } = await h.account('free');
      const r = await createJob(key, { video_ids: videoIds('vid', 2) });
      expect(r.status).toBe(403);
      expect(r.body.error.type).toBe('plan_not_allowed');
      expect(r.headers.get('x-ratelimit-limit')).toBe('30');
      expect(await credits(id)).toMatchObject({ balance: 30, held: 0 });
    });

    it('bad input is 400 and nothing is reserved: malformed JSON, both sources, empty list, 5,001 ids, non-string ids, oversize key', async () => {
      const { id, key } = await h.account('business');
      const bad = [
        await h.request('/jobs', { key, raw: '{"video_ids": [' }),
        await createJob(key, { video_ids: videoIds('vid', 2), channel_id: `UC${'a'.repeat(22)}` }),
        await createJob(key, {}),
        await createJob(key, { video_ids: [] }),
        await createJob(key, { video_ids: videoIds('vid', 5001) }),
        await createJob(key, { video_ids: ['dQw4w9WgXcQ', 42] }),
        await createJob(key, { video_ids: ['short'] }),
        await createJob(key, { channel_id: 'UCnope' }),
        await createJob(key, { video_ids: videoIds('vid', 2), include_comments: 'yes' }),
        await createJob(key, { video_ids: videoIds('vid', 2) }, { 'idempotency-key': 'k'.repeat(256) }),
        await createJob(key, ['dQw4w9WgXcQ']),
      ];
      for (const r of bad) {
        expect(r.status, r.text).toBe(400);
        expect(r.body.error.type).toBe('invalid_request');
        expect(r.headers.get('x-ratelimit-limit')).toBe('1000');
      }
      expect(await credits(id)).toMatchObject({ balance: 20000, held: 0 });
      expect((await h.request('/jobs', { key })).body.total).toBe(0);
    });

    it('5,000 videos is accepted; duplicates are counted once', async () => {
      const { key } = await h.account('business');
      const ids = videoIds('vid', 5000);
      const r = await createJob(key, { video_ids: [...ids, ...ids.slice(0, 10)] });
      expect(r.status).toBe(201);
      expect(r.body.videos).toBe(5000);
    });

    it('402 when credits are short (not cached: the same key succeeds once the balance allows)', async () => {
      const { id, key } = await h.account('starter');
      await h.leave(id, 10);
      const body = { video_ids: videoIds('vid', 11) };
      const short = await createJob(key, body, { 'idempotency-key': 'short-1' });
      expect(short.status).toBe(402);
      expect(short.body.error).toMatchObject({ type: 'insufficient_quota', remaining: 10, needed: 11 });
      expect((await h.admin(`/admin/accounts/${id}/cycles`)).status).toBe(200);
      const retry = await createJob(key, body, { 'idempotency-key': 'short-1' });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBeNull();
    });

    it('one POST /jobs is one request whatever N is', async () => {
      const { key } = await h.account('starter');
      const r = await createJob(key, { video_ids: videoIds('vid', 900) });
      expect(r.headers.get('x-ratelimit-remaining')).toBe('99');
    });
  });

  describe('idempotency', () => {
    it('same key + same body replays the original response with Idempotent-Replayed: true; one job only', async () => {
      const { id, key } = await h.account('starter');
      const body = { video_ids: videoIds('vid', 10), include_comments: false };
      const first = await createJob(key, body, { 'idempotency-key': 'replay-me' });
      expect(first.status).toBe(201);
      await process(first.body.id, 4);
      const second = await createJob(key, { include_comments: false, video_ids: videoIds('vid', 10) }, { 'idempotency-key': 'replay-me' });
      expect(second.status).toBe(201);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      expect(second.body).toEqual(first.body);
      expect(second.headers.get('x-ratelimit-limit')).toBe('100');
      expect((await h.request('/jobs', { key })).body.total).toBe(1);
      expect((await credits(id)).held).toBe(6);
    });

    it('same key + different body is 422 idempotency_key_reused and stores nothing', async () => {
      const { key } = await h.account('starter');
      await createJob(key, { video_ids: videoIds('vid', 2) }, { 'idempotency-key': 'k1' });
      const r = await createJob(key, { video_ids: videoIds('vid', 3) }, { 'idempotency-key': 'k1' });
      expect(r.status).toBe(422);
      expect(r.body.error.type).toBe('idempotency_key_reused');
      expect((await h.request('/jobs', { key })).body.total).toBe(1);
    });

    it('a 400 is not stored: the corrected request may reuse the key', async () => {
      const { key } = await h.account('starter');
      const bad = await createJob(key, { video_ids: [] }, { 'idempotency-key': 'fix-me' });
      expect(bad.status).toBe(400);
      const good = await createJob(key, { video_ids: videoIds('vid', 2) }, { 'idempotency-key': 'fix-me' });
      expect(good.status).toBe(201);
    });

    it('concurrent requests with one key create exactly one job; the others replay it or get 409', async () => {
      const { id, key } = await h.account('pro');
      const body = { video_ids: videoIds('vid', 50) };
      const replies = await Promise.all(Array.from({ length: 10 }, () => createJob(key, body, { 'idempotency-key': 'race' })));
      const created = replies.filter((r) => r.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(1);
      expect(new Set(created.map((r) => r.body.id)).size).toBe(1);
      expect(created.filter((r) => r.headers.get('idempotent-replayed') !== 'true')).toHaveLength(1);
      for (const r of replies.filter((x) => x.status !== 201)) {
        expect(r.status).toBe(409);
        expect(r.body.error.type).toBe('idempotency_key_in_use');
      }
      expect((await h.request('/jobs', { key })).body.total).toBe(1);
      expect((await credits(id)).held).toBe(50);
    });

    it('keys are scoped per account: another account with the same key gets its own job', async () => {
      const a = await h.account('starter');
      const b = await h.account('starter');
      const body = { video_ids: videoIds('vid', 2) };
      const first = await createJob(a.key, body, { 'idempotency-key': 'shared-key' });
      const second = await createJob(b.key, body, { 'idempotency-key': 'shared-key' });
      expect(second.status).toBe(201);
      expect(second.headers.get('idempotent-replayed')).toBeNull();
      expect(second.body.id).not.toBe(first.body.id);
    });

    it('the active-job-cap 429 is cached under the key and replays even after jobs finish; a new key works', async () => {
      const { key } = await h.account('starter');
      const jobs = [await createJob(key, { video_ids: videoIds('vid', 1) }), await createJob(key, { video_ids: videoIds('vid', 1, 1) })];
      const body = { video_ids: videoIds('vid', 3) };
      const capped = await createJob(key, body, { 'idempotency-key': 'capped' });
      expect(capped.status).toBe(429);
      expect(capped.body.error).toMatchObject({ type: 'job_limit_reached', active: 2, cap: 2 });
      expect(capped.headers.get('x-ratelimit-limit')).toBe('100');
      for (const job of jobs) await process(job.body.id, 1);
      expect((await h.request('/api/v1/usage', { key })).body.jobs.active).toBe(0);
      const replay = await createJob(key, body, { 'idempotency-key': 'capped' });
      expect(replay.status).toBe(429);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body.error.type).toBe('job_limit_reached');
      const fresh = await createJob(key, body, { 'idempotency-key': 'capped-2' });
      expect(fresh.status).toBe(201);
    });

    it('the per-minute 429 is not cached: the same key after Retry-After is processed normally', async () => {
      const { key } = await h.account('starter');
      for (let i = 0; i < 100; i++) await h.request('/api/v1/search?q=a', { key });
      const body = { video_ids: videoIds('vid', 2) };
      const limited = await createJob(key, body, { 'idempotency-key': 'after-429' });
      expect(limited.status).toBe(429);
      expect(limited.body.error.type).toBe('rate_limited');
      h.clock.advance(Number(limited.headers.get('retry-after')) * 1000);
      const retry = await createJob(key, body, { 'idempotency-key': 'after-429' });
      expect(retry.status).toBe(201);
      expect(retry.headers.get('idempotent-replayed')).toBeNull();
    });
  });

  describe('refunds and leases', () => {
    it('a refund after the paying cycle ended is recorded on the job, not added to the new balance', async () => {
      const { id, key } = await h.account('starter');
      const created = await createJob(key, { video_ids: [...videoIds('vid', 3), ...videoIds('unavail', 2), ...videoIds('vid', 5, 3)] });
      await process(created.body.id, 3);
      const cycle = await h.admin(`/admin/accounts/${id}/cycles`);
      expect(cycle.body.cycle.id).toBe(2);
      await process(created.body.id, 2);
      const canceled = await h.request(`/jobs/${created.body.id}`, { key, method: 'DELETE' });
      expect(canceled.body).toMatchObject({ cycle_id: 1, delivered: 3, spent: 3, refunded: 7, refunded_to_ended_cycle: 7, status: 'canceled' });
      const usage = (await h.request('/api/v1/usage', { key })).body;
      expect(usage.cycle.id).toBe(2);
      expect(usage.credits).toEqual({ allowance: 1000, balance: 1000, spent: 0, held: 0, available: 1000, next_expiry: null });
    });

    it('a job whose worker vanished is reclaimed by the sweep with its refunds; later results are refused', async () => {
      const { id, key } = await h.account('starter');
      const created = await createJob(key, { video_ids: videoIds('vid', 10) });
      await process(created.body.id, 4);
      h.clock.advance(6 * 60_000);
      const swept = await h.admin('/admin/sweep');
      expect(swept.status).toBe(200);
      expect(swept.body).toEqual({ accounts: expect.any(Number), ended: expect.any(Number) });
      expect(swept.body.ended).toBeGreaterThanOrEqual(1);
      const job = (await h.request(`/jobs/${created.body.id}`, { key })).body;
      expect(job).toMatchObject({ status: 'completed', delivered: 4, spent: 4, refunded: 6 });
      expect((await process(created.body.id, 2)).body.processed).toBe(0);
      expect(await credits(id)).toMatchObject({ balance: 996, held: 0 });
    });
  });

  describe('admin', () => {
    it('needs the admin token; plan change applies the new budget at once', async () => {
      const noToken = await h.request('/admin/accounts', { body: { plan: 'free' } });
      expect(noToken.status).toBe(401);
      const wrong = await h.request('/admin/accounts', { body: { plan: 'free' }, headers: { authorization: 'Bearer nope' } });
      expect(wrong.status).toBe(401);
      expect((await h.admin('/admin/accounts', { plan: 'platinum' })).status).toBe(400);
      const { id, key } = await h.account('free', { signup_at: '2026-01-01T00:00:00Z' });
      const usage = (await h.request('/api/v1/usage', { key })).body;
      expect(usage.cycle.start).toBe('2026-01-01T00:00:00.000Z');
      const changed = await h.admin(`/admin/accounts/${id}/plan`, { plan: 'pro' });
      expect(changed.status).toBe(200);
      expect((await h.request('/api/v1/usage', { key })).body.rate_limit.limit).toBe(300);
      expect((await h.admin('/admin/jobs/job_doesnotexist/process', { count: 1 })).status).toBe(404);
      expect((await h.admin('/admin/accounts/acct_missing/cycles')).status).toBe(404);
    });
  });
});
