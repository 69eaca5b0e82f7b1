// The one rule of the cookie-authenticated site, on the JSON
// routes and the pages of both example servers: a request that changes something and is
// authenticated only by the session cookie is refused 403 forbidden, before anything is counted
// or spent, when its Origin (or, when absent, its Referer; or else a browser's Sec-Fetch-Site)
// names another origin. Forms also carry a CSRF token; cookies are HttpOnly, SameSite=Lax and
// Secure over HTTPS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADAPTERS, type Harness, startHarness } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';
const EVIL = 'http://evil.example';

describe.each(ADAPTERS)('$name server: the cookie rule', (adapter) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(adapter, 'cookie-rule');
  });
  afterAll(async () => {
    await h?.close();
  });

  async function signIn(plan = 'starter') {
    const { id, key } = await h.account(plan);
    const r = await h.request('/web/login', { body: { api_key: key } });
    expect(r.status).toBe(200);
    return { id, key, cookie: r.headers.get('set-cookie')!.split(';')[0]! };
  }
  const webRemaining = async (cookie: string) => (await h.request('/api/v1/usage', { headers: { cookie } })).body.rate_limit.remaining as number;
  const credits = async (id: string) => (await h.service.tollgate.usage(id)).credits;

  it('a cookie-only POST /jobs from another origin is 403 forbidden in the error body: nothing created, counted or reserved', async () => {
    const { id, cookie } = await signIn();
    const body = { video_ids: ['vid00000001', 'vid00000002'] };
    const refused = await h.request('/jobs', { body, headers: { cookie, origin: EVIL } });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    expect(refused.body).toMatchObject({ error: { type: 'forbidden', message: expect.stringContaining(EVIL) }, request_id: expect.stringMatching(/^req_/) });
    expect(refused.headers.get('x-request-id')).toBe(refused.body.request_id);
    expect(refused.headers.get('x-ratelimit-limit')).toBeNull();
    expect(await webRemaining(cookie)).toBe(100);
    expect((await h.request('/jobs', { headers: { cookie } })).body.total).toBe(0);
    expect(await credits(id)).toMatchObject({ balance: 1000, held: 0 });
    // From the site itself it goes through.
    const own = await h.request('/jobs', { body, headers: { cookie, origin: h.url } });
    expect(own.status).toBe(201);
  });

  it('without Origin the Referer decides; Origin: null and another port of the same host are other origins', async () => {
    const { cookie } = await signIn();
    const body = { video_id: VIDEO, limit: 5 };
    const foreign: Array<Record<string, string>> = [
      { referer: `${EVIL}/page` },
      { origin: 'null' },
      { origin: 'http://127.0.0.1:1' },
      { referer: 'not a url' },
    ];
    for (const headers of foreign) {
      const r = await h.request('/web/collections', { body, headers: { cookie, ...headers } });
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect(r.body.error.type).toBe('forbidden');
    }
    const ok = await h.request('/web/collections', { body, headers: { cookie, referer: `${h.url}/collections` } });
    expect(ok.status).toBe(201);
  });

  it('with neither header, a browser that says Sec-Fetch-Site: cross-site or same-site is refused; same-origin and none (typed in) are not', async () => {
    const { id, cookie } = await signIn();
    for (const site of ['cross-site', 'same-site']) {
      const r = await h.request(`/transcript/${VIDEO}`, { headers: { cookie, 'sec-fetch-site': site } });
      expect(r.status, site).toBe(403);
    }
    for (const site of ['same-origin', 'none']) {
      expect((await h.request(`/transcript/${VIDEO}`, { headers: { cookie, 'sec-fetch-site': site } })).status, site).toBe(200);
    }
    expect((await credits(id)).balance).toBe(998);
  });

  it('a GET that spends credits is a state change too: a cookie-only transcript from another origin is refused and charges nothing', async () => {
    const { id, key, cookie } = await signIn();
    const refused = await h.request(`/transcript/${VIDEO}`, { headers: { cookie, referer: `${EVIL}/x` } });
    expect(refused.status).toBe(403);
    const comments = await h.request(`/api/v1/comments/${VIDEO}`, { headers: { cookie, origin: EVIL } });
    expect(comments.status).toBe(403);
    expect((await credits(id)).balance).toBe(1000);
    // Reads that spend nothing are not state changes; an API key is not a cookie.
    expect((await h.request('/api/v1/search?q=a', { headers: { cookie, origin: EVIL } })).status).toBe(200);
    expect((await h.request(`/transcript/${VIDEO}`, { key, headers: { origin: EVIL } })).status).toBe(200);
    expect((await h.request('/jobs', { key, body: { video_ids: ['vid00000003'] }, headers: { cookie, origin: EVIL } })).status).toBe(201);
  });

  it('body-less state changes need only the rule: DELETE /jobs/:id, DELETE /web/collections/:id and logout from another origin change nothing', async () => {
    const { id, cookie } = await signIn();
    const job = (await h.request('/jobs', { body: { video_ids: ['vid00000001'] }, headers: { cookie } })).body.id;
    const collection = (await h.request('/web/collections', { body: { video_id: VIDEO, limit: 10 }, headers: { cookie } })).body.id;
    expect((await h.request(`/jobs/${job}`, { method: 'DELETE', headers: { cookie, origin: EVIL } })).status).toBe(403);
    expect((await h.request(`/web/collections/${collection}`, { method: 'DELETE', headers: { cookie, origin: EVIL } })).status).toBe(403);
    const logout = await h.request('/web/logout', { method: 'POST', headers: { cookie, origin: EVIL } });
    expect(logout.status).toBe(403);
    expect(logout.headers.get('set-cookie')).toBeNull();
    expect(await credits(id)).toMatchObject({ held: 11 });
    // Same origin, no token needed: the cancels refund, logout ends the session.
    expect((await h.request(`/jobs/${job}`, { method: 'DELETE', headers: { cookie, origin: h.url } })).body.status).toBe('canceled');
    expect((await h.request(`/web/collections/${collection}`, { method: 'DELETE', headers: { cookie, origin: h.url } })).body.status).toBe('canceled');
    expect(await credits(id)).toMatchObject({ balance: 1000, held: 0 });
    expect((await h.request('/web/logout', { method: 'POST', headers: { cookie, origin: h.url } })).status).toBe(200);
    expect((await h.request('/api/v1/usage', { headers: { cookie } })).status).toBe(401);
  });

  it('signing in from another origin is refused, as JSON and as a form', async () => {
    const { key } = await h.account('starter');
    const json = await h.request('/web/login', { body: { api_key: key }, headers: { origin: EVIL } });
    expect(json.status).toBe(403);
    expect(json.body.error.type).toBe('forbidden');
    expect(json.headers.get('set-cookie')).toBeNull();
    const form = await h.request('/web/login', {
      raw: new URLSearchParams({ api_key: key }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: EVIL },
    });
    expect(form.status).toBe(403);
    expect(form.headers.get('content-type')).toMatch(/^text\/html/);
    expect(form.text).toContain('may not act with this site&#39;s session cookie');
    expect(form.headers.get('set-cookie') ?? '').not.toMatch(/tg_session=/);
  });

  it('the sign-in form carries a CSRF token bound to the tg_signin cookie; without both it is refused', async () => {
    const { key } = await h.account('starter');
    const home = await h.request('/');
    const signin = home.headers.get('set-cookie')!;
    expect(signin).toMatch(/^tg_signin=[A-Za-z0-9_-]{22,}; Path=\/; HttpOnly; SameSite=Lax$/);
    const cookie = signin.split(';')[0]!;
    const token = /name="csrf_token" value="([^"]+)"/.exec(home.text)![1]!;
    const post = (fields: Record<string, string>, headers: Record<string, string> = { cookie }) =>
      h.request('/web/login', {
        raw: new URLSearchParams(fields).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: h.url, ...headers },
        redirect: 'manual',
      });
    for (const [what, reply] of [
      ['no token', await post({ api_key: key })],
      ['a wrong token', await post({ api_key: key, csrf_token: `${token.slice(0, -2)}AA` })],
      ['no tg_signin cookie', await post({ api_key: key, csrf_token: token }, {})],
      ["another browser's cookie", await post({ api_key: key, csrf_token: token }, { cookie: 'tg_signin=AAAAAAAAAAAAAAAAAAAAAAAA' })],
    ] as const) {
      expect(reply.status, what).toBe(403);
      expect(reply.text, what).toContain('This form has expired or did not come from this site');
    }
    const ok = await post({ api_key: key, csrf_token: token });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toBe('/dashboard');
    expect(ok.headers.get('set-cookie')).toMatch(/^tg_session=[^;]+; Max-Age=86400; Path=\/; HttpOnly; SameSite=Lax$/);
  });

  it("the pages' forms carry a CSRF token bound to the session; a missing or foreign one is a 403 page, counted and spent nothing", async () => {
    const { id, cookie } = await signIn();
    const page = await h.request('/collections', { headers: { cookie } });
    const token = /name="csrf_token" value="([^"]+)"/.exec(page.text)![1]!;
    const other = await signIn();
    const otherToken = /name="csrf_token" value="([^"]+)"/.exec((await h.request('/collections', { headers: { cookie: other.cookie } })).text)![1]!;
    expect(otherToken).not.toBe(token);
    const remaining = await webRemaining(cookie);
    const post = (fields: Record<string, string>, origin = h.url) =>
      h.request('/collections', {
        raw: new URLSearchParams(fields).toString(),
        headers: { cookie, origin, 'content-type': 'application/x-www-form-urlencoded' },
        redirect: 'manual',
      });
    for (const [what, reply] of [
      ['no token', await post({ video_id: VIDEO, limit: '5' })],
      ["another session's token", await post({ video_id: VIDEO, limit: '5', csrf_token: otherToken })],
      ['another origin', await post({ video_id: VIDEO, limit: '5', csrf_token: token }, EVIL)],
    ] as const) {
      expect(reply.status, what).toBe(403);
      expect(reply.headers.get('content-type'), what).toMatch(/^text\/html/);
      expect(reply.text, what).toMatch(/<h1>Refused<\/h1>/);
    }
    expect(await webRemaining(cookie)).toBe(remaining);
    expect((await credits(id)).held).toBe(0);
    // What the other site sent is shown escaped by the template, never as markup.
    const hostile = await h.request('/collections', {
      raw: new URLSearchParams({ video_id: VIDEO, limit: '5', csrf_token: token }).toString(),
      headers: { cookie, referer: `${EVIL}/<script>alert(1)</script>`, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(hostile.status).toBe(403);
    expect(hostile.text).toContain(`${EVIL}/&lt;script&gt;alert(1)&lt;/script&gt;`);
    expect(hostile.text).not.toContain('<script>alert');
    const ok = await post({ video_id: VIDEO, limit: '5', csrf_token: token });
    expect(ok.status).toBe(303);
    expect(ok.headers.get('location')).toMatch(/^\/collections\/job_/);
    expect((await credits(id)).held).toBe(5);
  });
});

describe.each(ADAPTERS)('$name server: cookies over HTTPS', (adapter) => {
  let h: Harness;
  let behindProxy: Harness;
  beforeAll(async () => {
    h = await startHarness(adapter, 'cookie-https');
    behindProxy = await startHarness(adapter, 'cookie-proxy', { site: { trustProxy: true } });
  });
  afterAll(async () => {
    await h?.close();
    await behindProxy?.close();
  });

  it('cookies are Secure when the site is served over HTTPS; X-Forwarded-Proto is believed only with trustProxy', async () => {
    for (const harness of [h, behindProxy]) {
      const { key } = await harness.account('starter');
      const plain = await harness.request('/web/login', { body: { api_key: key } });
      expect(plain.headers.get('set-cookie')).not.toMatch(/Secure/);
      const forwarded = await harness.request('/web/login', { body: { api_key: key }, headers: { 'x-forwarded-proto': 'https' } });
      const cookie = forwarded.headers.get('set-cookie')!;
      expect(cookie).toMatch(/HttpOnly/);
      expect(cookie).toMatch(/SameSite=Lax/);
      if (harness === behindProxy) expect(cookie).toMatch(/; Secure/);
      else expect(cookie).not.toMatch(/Secure/);
    }
    // Behind the proxy the site's origin is the forwarded one: the rule compares with it.
    const { cookie } = await (async () => {
      const { key } = await behindProxy.account('starter');
      const r = await behindProxy.request('/web/login', { body: { api_key: key } });
      return { cookie: r.headers.get('set-cookie')!.split(';')[0]! };
    })();
    const forwarded = { cookie, 'x-forwarded-proto': 'https', 'x-forwarded-host': 'transcripts.example' };
    const body = { video_id: VIDEO, limit: 1 };
    expect((await behindProxy.request('/web/collections', { body, headers: { ...forwarded, origin: 'https://transcripts.example' } })).status).toBe(201);
    expect((await behindProxy.request('/web/collections', { body, headers: { ...forwarded, origin: behindProxy.url } })).status).toBe(403);
  });
});
