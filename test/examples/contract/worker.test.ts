// WORKER=auto against both example servers: BullMQ runs each job to the end with
// one recorded result per video, and a job survives a restart of the server (the next worker
// resumes from the cursor; no video is recorded twice).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createFakePlatform } from '../../../examples/shared/platform/index.ts';
import { uniquePrefix } from '../../helpers/redis.ts';
import { ADAPTERS, type Harness, startHarness, videoIds } from './harness.ts';

describe.each(ADAPTERS)('$name server: WORKER=auto', (adapter) => {
  const open: Harness[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((h) => h.close()));
  });
  const start = async (prefix: string, latencyMs = 0) => {
    const h = await startHarness(adapter, 'worker', { prefix, worker: 'auto', platform: createFakePlatform({ latencyMs }) });
    open.push(h);
    return h;
  };
  const job = async (h: Harness, key: string, id: string) => (await h.request(`/jobs/${id}`, { key })).body;

  it('the queue worker runs the seed example to the end: 480 delivered, 20 refunded, every result saved once', async () => {
    const h = await start(uniquePrefix(`worker-${adapter.name}`));
    const { id, key } = await h.account('starter');
    const ids = [...videoIds('vid', 480), ...videoIds('unavail', 15), ...videoIds('nocapt', 5)];
    const created = await h.request('/jobs', { key, body: { video_ids: ids } });
    expect(created.status).toBe(201);
    await vi.waitFor(async () => expect((await job(h, key, created.body.id)).status).toBe('completed'), { timeout: 30_000, interval: 50 });
    expect(await job(h, key, created.body.id)).toMatchObject({ delivered: 480, failed: { video_unavailable: 15, no_captions: 5 }, spent: 480, refunded: 20 });
    const results = await h.request(`/jobs/${created.body.id}/results?limit=1000`, { key });
    expect(results.body.total).toBe(500);
    expect(new Set(results.body.results.map((r: { video_id: string }) => r.video_id)).size).toBe(500);
    expect((await h.service.tollgate.usage(id)).credits).toMatchObject({ balance: 520, held: 0 });
  });

  it('a job survives a restart: the next server resumes it and no video is recorded twice', async () => {
    const prefix = uniquePrefix(`restart-${adapter.name}`);
    const first = await start(prefix, 5);
    const { key } = await first.account('pro');
    const created = await first.request('/jobs', { key, body: { video_ids: videoIds('vid', 200), include_comments: true } });
    await vi.waitFor(async () => expect((await job(first, key, created.body.id)).delivered).toBeGreaterThanOrEqual(20), { timeout: 30_000, interval: 20 });
    await first.close();
    open.splice(open.indexOf(first), 1);
    // Stopped mid-job: a server with no worker sees it half done.
    const idle = await startHarness(adapter, 'worker', { prefix, worker: 'manual' });
    const halfway = await job(idle, key, created.body.id);
    await idle.close();
    expect(halfway.status).toBe('running');
    expect(halfway.delivered).toBeLessThan(200);

    const second = await start(prefix);
    await vi.waitFor(async () => expect((await job(second, key, created.body.id)).status).toBe('completed'), { timeout: 30_000, interval: 50 });
    expect(await job(second, key, created.body.id)).toMatchObject({ delivered: 200, comment_pages: 200, spent: 400, refunded: 0 });
    const results = await second.request(`/jobs/${created.body.id}/results?limit=1000`, { key });
    expect(results.body.total).toBe(200);
    expect(new Set(results.body.results.map((r: { video_id: string }) => r.video_id)).size).toBe(200);
  });

  it('a website collection runs to its limit in the queue worker', async () => {
    const h = await start(uniquePrefix(`coll-${adapter.name}`));
    const { key } = await h.account('free');
    const login = await h.request('/web/login', { body: { api_key: key } });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const created = await h.request('/web/collections', { body: { video_id: 'dQw4w9WgXcQ', limit: 7 }, headers: { cookie } });
    await vi.waitFor(async () => expect((await h.request(`/web/collections/${created.body.id}`, { headers: { cookie } })).body.status).toBe('completed'), {
      timeout: 30_000,
      interval: 50,
    });
    expect((await h.request(`/web/collections/${created.body.id}`, { headers: { cookie } })).body).toMatchObject({
      spent: 7,
      comment_pages: 7,
      end_reason: 'limit_reached',
    });
  });
});
