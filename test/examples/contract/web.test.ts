// The website flow over real HTTP, against both example servers: demo login, the
// separate `web` counter with shared credits, and standalone comments collections.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADAPTERS, type Harness, startHarness } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';

describe.each(ADAPTERS)('$name server: website contract', (adapter) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(adapter, 'web');
  });
  afterAll(async () => {
    await h?.close();
  });

  async function login(key: string): Promise<string> {
    const r = await h.request('/web/login', { body: { api_key: key } });
    expect(r.status).toBe(200);
    return r.headers.get('set-cookie')!.split(';')[0]!;
  }
  const web = (cookie: string, path: string, options: { method?: string; body?: unknown } = {}) => h.request(path, { ...options, headers: { cookie } });
  const process = (id: string, count: number) => h.admin(`/admin/jobs/${id}/process`, { count });

  it('POST /web/login sets an HttpOnly, SameSite=Lax session cookie; a bad key is 401 without one', async () => {
    const { id, key } = await h.account('free');
    const bad = await h.request('/web/login', { body: { api_key: 'tgk_nope' } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('set-cookie')).toBeNull();
    const r = await h.request('/web/login', { body: { api_key: key } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ account_id: id, plan: 'free' });
    const cookie = r.headers.get('set-cookie')!;
    // The session is a key of its own (a tollgate key allowed only on `web`), never the API key.
    expect(cookie).toMatch(/^tg_session=[A-Za-z0-9_.:-]{32,};/);
    expect(cookie).not.toContain(key);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
  });

  it('session requests use the separate web counter but the same credits', async () => {
    const { id, key } = await h.account('starter');
    const cookie = await login(key);
    const viaWeb = await web(cookie, `/transcript/${VIDEO}`);
    expect(viaWeb.status).toBe(200);
    expect(viaWeb.headers.get('x-ratelimit-remaining')).toBe('99');
    await web(cookie, `/transcript/${VIDEO}`);
    const viaApi = await h.request(`/transcript/${VIDEO}`, { key });
    expect(viaApi.headers.get('x-ratelimit-remaining')).toBe('99');
    expect((await h.service.tollgate.usage(id)).credits.balance).toBe(997);
    const webUsage = await web(cookie, '/api/v1/usage');
    expect(webUsage.body.rate_limit.remaining).toBe(98);
    expect(webUsage.body.credits.balance).toBe(997);
  });

  it('a Free account collects comments on the web: each nonempty page takes 1 from L, and it stops when L is used up', async () => {
    const { id, key } = await h.account('free');
    const cookie = await login(key);
    const created = await web(cookie, '/web/collections', { body: { video_id: VIDEO, limit: 5 } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ video_id: VIDEO, limit: 5, reserved: 5, status: 'queued' });
    expect(created.headers.get('x-ratelimit-limit')).toBe('30');
    expect((await h.service.tollgate.usage(id)).credits).toMatchObject({ balance: 25, held: 5 });
    const processed = await process(created.body.id, 100);
    expect(processed.body.processed).toBe(5);
    const done = await web(cookie, `/web/collections/${created.body.id}`);
    expect(done.body).toMatchObject({ status: 'completed', end_reason: 'limit_reached', comment_pages: 5, spent: 5, refunded: 0 });
    const pages = await web(cookie, `/jobs/${created.body.id}/results`);
    expect(pages.body.results).toHaveLength(5);
    expect(pages.body.results[0].page_kind).toBe('top');
    expect(pages.body.results[1].page_kind).toBe('replies');
    expect((await h.service.tollgate.usage(id)).credits).toMatchObject({ balance: 25, spent: 5, held: 0 });
  });

  it('when the pages run out first, the unused part of L is refunded', async () => {
    const { id, key } = await h.account('starter');
    const cookie = await login(key);
    const created = await web(cookie, '/web/collections', { body: { video_id: VIDEO, limit: 100 } });
    await process(created.body.id, 1000);
    const done = (await web(cookie, `/web/collections/${created.body.id}`)).body;
    // 3 Top pages of 20 comments, each comment with a one-page reply thread.
    expect(done).toMatchObject({ status: 'completed', comment_pages: 63, spent: 63, refunded: 37 });
    expect((await h.service.tollgate.usage(id)).credits).toMatchObject({ balance: 937, held: 0 });
  });

  it('empty pages and failures take nothing: a whole refund', async () => {
    const { id, key } = await h.account('starter');
    const cookie = await login(key);
    for (const video of ['nocomm00001', 'errcomm0001']) {
      const created = await web(cookie, '/web/collections', { body: { video_id: video, limit: 10 } });
      expect(created.status).toBe(201);
      await process(created.body.id, 10);
      expect((await web(cookie, `/web/collections/${created.body.id}`)).body).toMatchObject({ status: 'completed', spent: 0, refunded: 10 });
    }
    expect((await h.service.tollgate.usage(id)).credits.balance).toBe(1000);
  });

  it('DELETE /web/collections/:id refunds the unspent pages, once', async () => {
    const { id, key } = await h.account('starter');
    const cookie = await login(key);
    const created = await web(cookie, '/web/collections', { body: { video_id: VIDEO, limit: 50 } });
    await process(created.body.id, 4);
    const canceled = await web(cookie, `/web/collections/${created.body.id}`, { method: 'DELETE' });
    expect(canceled.body).toMatchObject({ status: 'canceled', spent: 4, refunded: 46 });
    const again = await web(cookie, `/web/collections/${created.body.id}`, { method: 'DELETE' });
    expect(again.body.refunded).toBe(46);
    expect((await process(created.body.id, 3)).body.processed).toBe(0);
    expect((await h.service.tollgate.usage(id)).credits).toMatchObject({ balance: 996, held: 0 });
  });

  it('L must be 1..10,000 (400) and within the balance (402); collections count toward the active-job cap', async () => {
    const { id, key } = await h.account('free');
    const cookie = await login(key);
    for (const body of [
      { video_id: VIDEO, limit: 0 },
      { video_id: VIDEO, limit: 10_001 },
      { video_id: VIDEO, limit: 1.5 },
      { video_id: 'bad', limit: 5 },
      { video_id: VIDEO },
    ]) {
      const r = await web(cookie, '/web/collections', { body });
      expect(r.status).toBe(400);
      expect(r.body.error.type).toBe('invalid_request');
    }
    const tooMuch = await web(cookie, '/web/collections', { body: { video_id: VIDEO, limit: 31 } });
    expect(tooMuch.status).toBe(402);
    expect(tooMuch.body.error).toMatchObject({ type: 'insufficient_quota', remaining: 30, needed: 31 });
    expect((await web(cookie, '/web/collections', { body: { video_id: VIDEO, limit: 10 } })).status).toBe(201);
    const capped = await web(cookie, '/web/collections', { body: { video_id: VIDEO, limit: 10 } });
    expect(capped.status).toBe(429);
    expect(capped.body.error).toMatchObject({ type: 'job_limit_reached', active: 1, cap: 1 });
    expect((await h.service.tollgate.usage(id)).credits).toMatchObject({ balance: 20, held: 10 });
  });

  it('collections need a website session: an API key alone is 401; logout ends the session', async () => {
    const { key } = await h.account('starter');
    const viaKey = await h.request('/web/collections', { key, body: { video_id: VIDEO, limit: 5 } });
    expect(viaKey.status).toBe(401);
    expect(viaKey.headers.get('x-ratelimit-limit')).toBeNull();
    const cookie = await login(key);
    expect((await web(cookie, '/web/logout', { method: 'POST' })).status).toBe(200);
    expect((await web(cookie, '/web/collections', { body: { video_id: VIDEO, limit: 5 } })).status).toBe(401);
  });

  it('a session is a key of its own, allowed only on web: never an API key, and an API key is never a session; it expires after 24 h', async () => {
    const { key } = await h.account('starter');
    const cookie = await login(key);
    const session = cookie.slice('tg_session='.length);
    for (const r of [
      await h.request('/api/v1/search?q=a', { key: session }),
      await h.request('/api/v1/search?q=a', { headers: { 'x-api-key': session } }),
      await h.request('/mcp', {
        key: session,
        body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        headers: { accept: 'application/json, text/event-stream' },
      }),
      await h.request('/web/login', { body: { api_key: session } }),
      await web(`tg_session=${key}`, '/api/v1/search?q=a'),
    ]) {
      expect(r.status).toBe(401);
      expect(r.headers.get('x-ratelimit-limit')).toBeNull();
    }
    expect((await web(cookie, '/api/v1/search?q=a')).status).toBe(200);
    h.clock.advance(24 * 3_600_000);
    expect((await web(cookie, '/api/v1/search?q=a')).status).toBe(401);
    expect((await h.request('/api/v1/search?q=a', { key })).status).toBe(200);
  });
});
