// The REST contract over real HTTP, against both example servers: auth, rate-limit headers,
// the free and charged sync endpoints, their charging order and the race for the last credit.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Service } from '../../../examples/shared/service.ts';
import { ADAPTERS, type Harness, startHarness } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';

describe.each(ADAPTERS)('$name server: REST contract', (adapter) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(adapter, 'rest');
  });
  afterAll(async () => {
    await h?.close();
  });

  const balance = async (id: string) => (await h.service.tollgate.usage(id)).credits.balance;

  describe('authentication', () => {
    it('401 without a key, with a wrong key, and with a malformed one; no rate-limit headers on 401', async () => {
      const { key } = await h.account('starter');
      const wrong = key.slice(0, -4) + (key.endsWith('aaaa') ? 'bbbb' : 'aaaa');
      const attempts: Record<string, string>[] = [{}, { authorization: `Bearer ${wrong}` }, { 'x-api-key': 'nope' }, { authorization: 'Basic abc' }];
      for (const headers of attempts) {
        const r = await h.request(`/transcript/${VIDEO}`, { headers });
        expect(r.status).toBe(401);
        expect(r.body.error.type).toBe('unauthorized');
        expect(r.body.request_id).toMatch(/^req_/);
        expect(r.headers.get('x-request-id')).toBe(r.body.request_id);
        expect(r.headers.get('x-ratelimit-limit')).toBeNull();
        expect(r.headers.get('x-ratelimit-remaining')).toBeNull();
      }
    });

    it('accepts both Authorization: Bearer and X-API-Key for the same account and counter', async () => {
      const { key } = await h.account('starter');
      const a = await h.request('/api/v1/search?q=cats', { key });
      const b = await h.request('/api/v1/search?q=cats', { headers: { 'x-api-key': key } });
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(a.headers.get('x-ratelimit-remaining')).toBe('99');
      expect(b.headers.get('x-ratelimit-remaining')).toBe('98');
    });
  });

  describe('rate limiting', () => {
    it('headers on every authenticated response, errors included; 429 rate_limited with Retry-After is not counted', async () => {
      const { id, key } = await h.account('free');
      const bad = await h.request('/transcript/short', { key });
      expect(bad.status).toBe(400);
      expect(bad.headers.get('x-ratelimit-limit')).toBe('30');
      expect(bad.headers.get('x-ratelimit-remaining')).toBe('29');
      expect(Number(bad.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
      for (let i = 0; i < 29; i++) expect((await h.request('/api/v1/search?q=x', { key })).status).toBe(200);
      const denied = await h.request(`/transcript/${VIDEO}`, { key });
      expect(denied.status).toBe(429);
      expect(denied.body.error).toMatchObject({ type: 'rate_limited', message: 'Rate limit exceeded' });
      expect(denied.headers.get('content-type')).toContain('application/json');
      expect(Number(denied.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(denied.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(await balance(id)).toBe(30);
      // Usage is free even when the budget is spent, and shows the denied request was not counted.
      const usage = await h.request('/api/v1/usage', { key });
      expect(usage.status).toBe(200);
      expect(usage.body.rate_limit).toMatchObject({ limit: 30, remaining: 0 });
      h.clock.advance(60_000);
      const after = await h.request(`/transcript/${VIDEO}`, { key });
      expect(after.status).toBe(200);
      expect(after.headers.get('x-ratelimit-remaining')).toBe('29');
    });

    it('GET /api/v1/usage counts nothing and has the documented body', async () => {
      const { key } = await h.account('pro');
      for (let i = 0; i < 3; i++) await h.request('/api/v1/usage', { key });
      const r = await h.request('/api/v1/usage', { key });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-remaining')).toBe('300');
      expect(r.body).toEqual({
        plan: 'pro',
        credits: { allowance: 5000, balance: 5000, spent: 0, held: 0, available: 5000, next_expiry: null },
        cycle: { id: 1, start: expect.any(String), end: expect.any(String) },
        rate_limit: { limit: 300, remaining: 300, reset_seconds: expect.any(Number) },
        jobs: { active: 0, cap: 5 },
        // Without grants the cycle's allowance is the one source (test/examples/contract/grants.test.ts has the rest).
        grants: [
          {
            grant_id: 'cycle:1',
            kind: 'plan',
            status: 'active',
            priority: 50,
            amount: 5000,
            remaining: 5000,
            spent: 0,
            held: 0,
            expired: 0,
            voided: 0,
            refunded_after_end: 0,
            effective_at: r.body.cycle.start,
            expires_at: r.body.cycle.end,
            created_at: r.body.cycle.start,
            ended_at: null,
            reason: null,
          },
        ],
      });
      expect(Date.parse(r.body.cycle.end)).toBeGreaterThan(Date.parse(r.body.cycle.start));
    });
  });

  describe('GET /transcript/:id', () => {
    it('charges 1 on success, in every format', async () => {
      const { id, key } = await h.account('starter');
      const json = await h.request(`/transcript/${VIDEO}`, { key });
      expect(json.status).toBe(200);
      expect(json.body).toMatchObject({ video_id: VIDEO, segments: expect.any(Array) });
      const srt = await h.request(`/transcript/${VIDEO}?format=srt`, { key });
      expect(srt.status).toBe(200);
      expect(srt.text).toMatch(/^1\n00:00:/);
      const vtt = await h.request(`/transcript/${VIDEO}?format=vtt`, { key });
      expect(vtt.text.startsWith('WEBVTT')).toBe(true);
      const text = await h.request(`/transcript/${VIDEO}?format=text`, { key });
      expect(text.headers.get('content-type')).toContain('text/plain');
      expect(await balance(id)).toBe(996);
    });

    it('a failed fetch or conversion charges nothing (404 video_unavailable, no_captions, 502 on badconv)', async () => {
      const { id, key } = await h.account('starter');
      const unavailable = await h.request('/transcript/unavail0001', { key });
      expect([unavailable.status, unavailable.body.error.type]).toEqual([404, 'video_unavailable']);
      const noCaptions = await h.request('/transcript/nocapt00001', { key });
      expect([noCaptions.status, noCaptions.body.error.type]).toEqual([404, 'no_captions']);
      const badConversion = await h.request('/transcript/badconv0001?format=srt', { key });
      expect([badConversion.status, badConversion.body.error.type]).toEqual([502, 'upstream_error']);
      const badFormat = await h.request(`/transcript/${VIDEO}?format=pdf`, { key });
      expect(badFormat.status).toBe(400);
      expect(await balance(id)).toBe(1000);
      // JSON needs no conversion, so a badconv video still succeeds as JSON.
      expect((await h.request('/transcript/badconv0001', { key })).status).toBe(200);
      expect(await balance(id)).toBe(999);
    });

    it('402 insufficient_quota with remaining and needed when the balance is empty; nothing is fetched or sent', async () => {
      const { id, key } = await h.account('free');
      await h.leave(id, 0);
      const r = await h.request(`/transcript/${VIDEO}`, { key });
      expect(r.status).toBe(402);
      expect(r.body.error).toMatchObject({ type: 'insufficient_quota', remaining: 0, needed: 1 });
      expect(r.body.error.message).toMatch(/0 remaining, 1 needed/);
      expect(r.headers.get('x-ratelimit-remaining')).toBe('29');
    });

    it('race for the last credit: 20 concurrent transcripts with 1 credit give exactly one 200, the rest 402', async () => {
      const { id, key } = await h.account('starter');
      await h.leave(id, 1);
      const replies = await Promise.all(Array.from({ length: 20 }, () => h.request(`/transcript/${VIDEO}?format=text`, { key })));
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 402)).toHaveLength(19);
      for (const r of replies.filter((x) => x.status === 402)) {
        expect(r.body.error.type).toBe('insufficient_quota');
        expect(r.text).not.toContain('-->');
      }
      const usage = await h.service.tollgate.usage(id);
      expect(usage.credits).toMatchObject({ balance: 0, spent: 1000 });
    });
  });

  describe('GET /api/v1/comments/:videoId', () => {
    it('each nonempty page costs 1: Top, Newest, a continuation and a reply thread', async () => {
      const { id, key } = await h.account('starter');
      const top = await h.request(`/api/v1/comments/${VIDEO}`, { key });
      expect(top.status).toBe(200);
      expect(top.body.comments).toHaveLength(20);
      const next = await h.request(`/api/v1/comments/${VIDEO}?page_token=${top.body.next_page_token}`, { key });
      expect(next.status).toBe(200);
      const newest = await h.request(`/api/v1/comments/${VIDEO}?sort=newest`, { key });
      expect(newest.body.sort).toBe('newest');
      const replies = await h.request(`/api/v1/comments/${VIDEO}?reply_to=${top.body.comments[0].id}`, { key });
      expect(replies.status).toBe(200);
      expect(replies.body.reply_to).toBe(top.body.comments[0].id);
      expect(await balance(id)).toBe(996);
    });

    it('empty pages and errors cost nothing', async () => {
      const { id, key } = await h.account('starter');
      const empty = await h.request('/api/v1/comments/nocomm00001', { key });
      expect(empty.status).toBe(200);
      expect(empty.body.comments).toEqual([]);
      const failed = await h.request('/api/v1/comments/errcomm0001', { key });
      expect([failed.status, failed.body.error.type]).toEqual([502, 'upstream_error']);
      const badToken = await h.request(`/api/v1/comments/${VIDEO}?page_token=garbage`, { key });
      expect(badToken.status).toBe(400);
      const badSort = await h.request(`/api/v1/comments/${VIDEO}?sort=hot`, { key });
      expect(badSort.status).toBe(400);
      expect(await balance(id)).toBe(1000);
    });

    it('402 before fetching when the balance is empty', async () => {
      const { id, key } = await h.account('free');
      await h.leave(id, 0);
      const r = await h.request(`/api/v1/comments/${VIDEO}`, { key });
      expect(r.status).toBe(402);
      expect(r.body.error).toMatchObject({ type: 'insufficient_quota', remaining: 0, needed: 1 });
    });
  });

  describe('free reads', () => {
    it('search, video details, channel and playlist listings spend no credit but count a request', async () => {
      const { id, key } = await h.account('starter');
      const search = await h.request('/api/v1/search?q=lofi%20beats', { key });
      expect(search.status).toBe(200);
      expect(search.body.results.length).toBeGreaterThan(0);
      const video = await h.request(`/api/v1/videos/${VIDEO}`, { key });
      expect(video.body.id).toBe(VIDEO);
      const channel = await h.request(`/api/v1/channels/UC${'a'.repeat(22)}/videos`, { key });
      expect(channel.body.video_ids.length).toBeGreaterThanOrEqual(20);
      const playlist = await h.request(`/api/v1/playlists/PL${'b'.repeat(20)}/videos`, { key });
      expect(playlist.body.video_ids.length).toBeGreaterThanOrEqual(20);
      const badChannel = await h.request('/api/v1/channels/nope/videos', { key });
      expect(badChannel.status).toBe(400);
      expect((await h.request('/api/v1/videos/unavail0001', { key })).status).toBe(404);
      expect(await balance(id)).toBe(1000);
      expect(badChannel.headers.get('x-ratelimit-remaining')).toBe('95');
    });

    it('unknown routes are 404 with the error body', async () => {
      const r = await h.request('/nowhere');
      expect(r.status).toBe(404);
      expect(r.body.error.type).toBe('not_found');
    });
  });

  describe('requests no route can read', () => {
    it('a path that is not valid percent-encoding is 400 invalid_request with the error body and X-Request-Id, before any auth or counting', async () => {
      const { id, key } = await h.account('starter');
      const attempts: Array<[string, string]> = [
        ['GET', '/jobs/%zz'],
        ['GET', '/transcript/%zz'],
        ['GET', '/api/v1/videos/%E0%A4%A'],
        ['GET', '/jobs/%zz/results'],
        ['DELETE', '/jobs/%zz'],
        ['POST', '/admin/accounts/%zz/cycles'],
        ['GET', '/%zz'],
      ];
      for (const [method, path] of attempts) {
        const r = await h.request(path, { key, method });
        expect(r.status, `${method} ${path}`).toBe(400);
        expect(r.headers.get('content-type'), `${method} ${path}`).toContain('application/json');
        expect(r.body.error, `${method} ${path}`).toMatchObject({ type: 'invalid_request', message: expect.any(String) });
        expect(r.body.request_id).toMatch(/^req_/);
        expect(r.headers.get('x-request-id')).toBe(r.body.request_id);
        expect(r.text).not.toMatch(/URIError|at .*\.js|<html/i);
      }
      expect((await h.service.tollgate.usage(id)).rateLimit.remaining).toBe(100);
    });

    it("an error thrown past the routes gets the error body from the adapter's error handler, not the framework's page", async () => {
      const thrower = (error: Error) => async (): Promise<never> => {
        throw error;
      };
      const service: Service = {
        ...h.service,
        routes: [
          { method: 'GET', path: '/unreadable', handle: thrower(Object.assign(new Error('bad header'), { status: 400, expose: true })) },
          { method: 'GET', path: '/broken', handle: thrower(new Error('secret internals')) },
        ],
      };
      const server = await adapter.listen(service, 0);
      const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
      try {
        for (const [path, status, type] of [
          ['/unreadable', 400, 'invalid_request'],
          ['/broken', 500, 'internal_error'],
        ] as const) {
          const response = await fetch(`${server.url}${path}`);
          const text = await response.text();
          expect(response.status, path).toBe(status);
          expect(response.headers.get('content-type'), path).toContain('application/json');
          const body = JSON.parse(text);
          expect(body.error.type, path).toBe(type);
          expect(response.headers.get('x-request-id')).toBe(body.request_id);
          expect(text).not.toMatch(/secret internals|bad header|at .*\.ts/);
        }
      } finally {
        errors.mockRestore();
        await server.close();
      }
    });
  });

  describe('IETF draft fields (opt-in)', () => {
    let ietf: Harness;
    beforeAll(async () => {
      ietf = await startHarness(adapter, 'rest-ietf', { ietfHeaders: true });
    });
    afterAll(async () => {
      await ietf?.close();
    });

    it('RateLimit-Policy and RateLimit sit beside the legacy headers', async () => {
      const { key } = await ietf.account('starter');
      const r = await ietf.request('/api/v1/search?q=x', { key });
      expect(r.headers.get('ratelimit-policy')).toBe('"api";q=100;w=60');
      expect(r.headers.get('ratelimit')).toMatch(/^"api";r=99;t=\d+$/);
      expect(r.headers.get('x-ratelimit-remaining')).toBe('99');
    });
  });
});
