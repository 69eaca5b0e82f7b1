// The website over plain HTTP, against both example servers (the browser tests in
// test/examples/browser drive the same pages in Chromium): the same HTML from both, pages on
// the `web` surface with its own counter and the shared credits, static assets that count
// nothing, forms that reuse the JSON routes' rules, errors told as sentences, and the headers
// every page carries.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXAMPLE_PLANS } from '../../../examples/shared/plans.ts';
import { CONTENT_SECURITY_POLICY } from '../../../examples/shared/web/render.ts';
import { ADAPTERS, type Harness, startHarness, videoIds } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';
/** The example's plans and one whose website budget is 3 requests a minute. */
const PLANS = {
  ...EXAMPLE_PLANS,
  tiny: { ...EXAMPLE_PLANS.starter, limits: { api: EXAMPLE_PLANS.starter.limits.api, web: [{ limit: 3, windowMs: 60_000 }] } },
};
const FORM = 'application/x-www-form-urlencoded';

const harnesses = new Map<string, Harness>();
beforeAll(async () => {
  for (const adapter of ADAPTERS) harnesses.set(adapter.name, await startHarness(adapter, 'site', { plans: PLANS }));
});
afterAll(async () => {
  for (const h of harnesses.values()) await h.close();
});

describe('both servers', () => {
  it("declare which routes read forms: the pages' forms, sign-in and sign-out, and the OAuth token endpoint; every other route reads JSON", () => {
    const routes = [...harnesses.values()][0]!.service.routes;
    expect(
      routes
        .filter((r) => r.bodies?.includes('form'))
        .map((r) => `${r.method} ${r.path}`)
        .sort(),
    ).toEqual([
      'POST /bulk',
      'POST /bulk/:id/cancel',
      'POST /collections',
      'POST /collections/:id/cancel',
      'POST /oauth/token',
      'POST /transcripts',
      'POST /web/login',
      'POST /web/logout',
    ]);
    expect(routes.find((r) => r.path === '/jobs' && r.method === 'POST')!.bodies).toEqual(['json']);
  });

  it('render the same HTML for the same page', async () => {
    const pages = await Promise.all([...harnesses.values()].map(async (h) => (await h.request('/')).text.replace(/name="csrf_token" value="[^"]+"/, '')));
    expect(pages[0]).toContain('<form method="post" action="/web/login"');
    expect(pages[1]).toBe(pages[0]);
  });
});

describe.each(ADAPTERS)('$name server: the website', (adapter) => {
  let h: Harness;
  beforeAll(() => {
    h = harnesses.get(adapter.name)!;
  });

  async function signIn(plan = 'starter') {
    const { id, key } = await h.account(plan);
    const r = await h.request('/web/login', { body: { api_key: key } });
    return { id, key, cookie: r.headers.get('set-cookie')!.split(';')[0]! };
  }
  const get = (path: string, cookie: string) => h.request(path, { headers: { cookie }, redirect: 'manual' });
  const token = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
  /** Sends a page's form as a browser would: from this origin, with the page's CSRF token. */
  async function submit(cookie: string, page: string, action: string, fields: Record<string, string>) {
    const csrf_token = token((await get(page, cookie)).text);
    return h.request(action, {
      raw: new URLSearchParams({ csrf_token, ...fields }).toString(),
      headers: { cookie, origin: h.url, 'content-type': FORM },
      redirect: 'manual',
    });
  }
  const webRemaining = async (cookie: string) => (await h.request('/api/v1/usage', { headers: { cookie } })).body.rate_limit.remaining as number;
  const credits = async (id: string) => (await h.service.tollgate.usage(id)).credits;
  const testId = (html: string, id: string) => new RegExp(`data-testid="${id}"[^>]*>([^<]*)<`).exec(html)?.[1];

  it('/ says what the service is and signs in with a plain form (no script needed): a redirect to the dashboard with the session cookie', async () => {
    const { key } = await h.account('starter');
    const home = await h.request('/');
    expect(home.status).toBe(200);
    expect(home.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(home.text).toContain('Transcripts and comments of any video');
    expect(home.text).toMatch(/<td>starter<\/td><td>1,000<\/td>/);
    const signin = home.headers.get('set-cookie')!.split(';')[0]!;
    const reply = await h.request('/web/login', {
      raw: new URLSearchParams({ csrf_token: token(home.text), api_key: key }).toString(),
      headers: { cookie: signin, origin: h.url, 'content-type': FORM },
      redirect: 'manual',
    });
    expect(reply.status).toBe(303);
    expect(reply.headers.get('location')).toBe('/dashboard');
    const session = reply.headers.get('set-cookie')!.split(';')[0]!;
    expect((await get('/dashboard', session)).status).toBe(200);
    // A wrong key: the page again, with a sentence and the 401 status; the JSON login is unchanged.
    const wrong = await h.request('/web/login', {
      raw: new URLSearchParams({ csrf_token: token(home.text), api_key: 'tgk_nope' }).toString(),
      headers: { cookie: signin, origin: h.url, 'content-type': FORM },
    });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('That API key was not accepted');
    expect((await h.request('/web/login', { body: { api_key: key } })).body).toMatchObject({ plan: 'starter' });
  });

  it("every page carries the CSP (only the site's own scripts and styles) and has no inline script or style", async () => {
    const { cookie } = await signIn();
    for (const path of ['/', '/dashboard', '/transcripts', '/collections', '/bulk']) {
      const page = await get(path, cookie);
      expect(page.status, path).toBe(200);
      expect(page.headers.get('content-security-policy'), path).toBe(CONTENT_SECURITY_POLICY);
      expect(CONTENT_SECURITY_POLICY).toMatch(/script-src 'self'; style-src 'self'/);
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(page.headers.get('cache-control')).toBe('no-store');
      expect(page.text, path).not.toMatch(/<script(?![^>]*\ssrc=)/);
      expect(page.text, path).not.toMatch(/\sstyle=|<style|\son[a-z]+=/i);
    }
  });

  it('pages count on the web surface, not on api; static assets count nothing and need no session', async () => {
    const { key, cookie } = await signIn();
    expect(await webRemaining(cookie)).toBe(100);
    await get('/dashboard', cookie);
    await get('/bulk', cookie);
    expect(await webRemaining(cookie)).toBe(98);
    const page = (await get('/dashboard', cookie)).text;
    const assets = [...page.matchAll(/(?:href|src)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < 5; i++) {
      for (const asset of assets) {
        const reply = await h.request(asset, { headers: { cookie } });
        expect(reply.status, asset).toBe(200);
        expect(reply.headers.get('x-ratelimit-limit')).toBeNull();
      }
    }
    expect((await h.request('/assets/site.css')).headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect((await h.request('/assets/site.js')).headers.get('cache-control')).toMatch(/immutable/);
    expect((await h.request('/assets/nope.js')).status).toBe(404);
    expect(await webRemaining(cookie)).toBe(97);
    expect(Number((await h.request('/api/v1/usage', { key })).headers.get('x-ratelimit-remaining'))).toBe(100);
  });

  it('a page without a valid session goes to sign-in, dropping a stale cookie', async () => {
    const none = await h.request('/dashboard', { redirect: 'manual' });
    expect(none.status).toBe(303);
    expect(none.headers.get('location')).toBe('/');
    const stale = await get('/dashboard', 'tg_session=tgk_acct_0_0_0');
    expect(stale.status).toBe(303);
    expect(stale.headers.get('set-cookie')).toMatch(/^tg_session=; Max-Age=0/);
  });

  it('the dashboard shows the plan, the credits meter, the cycle, the web budget, running jobs and the per-day chart', async () => {
    const { id, cookie } = await signIn();
    await submit(cookie, '/transcripts', '/transcripts', { video_id: VIDEO, format: 'text' });
    await h.request('/web/collections', { body: { video_id: VIDEO, limit: 20 }, headers: { cookie } });
    await h.admin(`/admin/jobs/${(await h.service.tollgate.holds.list(id)).holds[0]!.id}/process`, { count: 4 });
    const page = (await get('/dashboard', cookie)).text;
    expect(testId(page, 'plan')).toBe('starter');
    expect(testId(page, 'balance')).toBe('979');
    expect(testId(page, 'spent')).toBe('5');
    expect(testId(page, 'held')).toBe('16');
    expect(testId(page, 'allowance')).toBe('1,000');
    // The harness's clock is 15 Jan 2026, 12:00 UTC; a monthly cycle from signup.
    expect(testId(page, 'cycle-end')).toBe('Sun, 15 Feb 2026');
    expect(testId(page, 'days-left')).toBe('31');
    expect(Number(testId(page, 'web-remaining'))).toBeLessThan(100);
    expect(page).toMatch(/<progress max="20" value="4" data-field="progress"/);
    expect(page).toContain('data-poll="/jobs?limit=100"');
    // Today's bar: 1 transcript + 4 comment pages, from tollgate.credits.history.
    const today = Date.UTC(2026, 0, 15);
    expect(page).toMatch(new RegExp(`data-day="${today}" data-spent="5"><title>Thu, 15 Jan 2026: 5 credits spent</title>`));
  });

  it('the dashboard lists the sources of credits with their expiry, numbered in the order they are spent', async () => {
    const { id, cookie } = await signIn();
    const day = 86_400_000;
    await h.admin(`/admin/accounts/${id}/grants`, { amount: 5000, kind: 'paid', reason: 'Top-up pack', operation_id: 'pack' });
    await h.admin(`/admin/accounts/${id}/grants`, { amount: 100, kind: 'promotional', expires_at: h.clock.now + 3 * day, reason: 'Welcome offer' });
    await h.admin(`/admin/accounts/${id}/grants`, { amount: 7, kind: 'promotional', effective_at: h.clock.now + day, expires_at: h.clock.now + 40 * day });
    await submit(cookie, '/transcripts', '/transcripts', { video_id: VIDEO, format: 'text' });
    const page = (await get('/dashboard', cookie)).text;
    expect(testId(page, 'available')).toBe('6,099');
    const rows = [...page.matchAll(/<tr data-testid="source" data-grant-id="([^"]+)">([\s\S]*?)<\/tr>/g)].map(([, grantId, row]) => ({
      grantId,
      order: /data-field="order">([^<]*)</.exec(row!)![1],
      remaining: /data-field="remaining">([^<]*)</.exec(row!)![1],
      expires: /data-field="expires">([^<]*)</.exec(row!)![1],
      status: /data-field="status">([^<]*)</.exec(row!)![1],
      text: row!
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim(),
    }));
    // The promotion expires first, then the cycle, then the paid pack (never); the pending grant is not in the order yet.
    const date = (ms: number) =>
      new Intl.DateTimeFormat('en-GB', { weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', timeZone: 'UTC' }).format(ms);
    expect(rows.map(({ text: _text, ...row }) => row)).toEqual([
      { grantId: 'g2', order: '1.', remaining: '99', expires: date(h.clock.now + 3 * day), status: 'active' },
      { grantId: 'cycle:1', order: '2.', remaining: '1,000', expires: date((await h.service.tollgate.usage(id)).cycle.end), status: 'active' },
      { grantId: 'g1', order: '3.', remaining: '5,000', expires: 'never', status: 'active' },
      {
        grantId: 'g3',
        order: '',
        remaining: '7',
        expires: `starts ${date(h.clock.now + day)}, expires ${date(h.clock.now + 40 * day)}`,
        status: 'pending',
      },
    ]);
    expect(rows[0]!.text).toContain('Promotional credits Welcome offer');
    expect(rows[1]!.text).toContain('Plan allowance (cycle 1)');
    expect(rows[2]!.text).toContain('Paid credits Top-up pack');
    expect(page).toContain('Each charge is taken from the first row with credits left');
  });

  it('the dashboard shows a low-balance notice once a threshold has fired in the current cycle, and none in the next cycle', async () => {
    const { id, cookie } = await signIn();
    const dashboard = async () => (await get('/dashboard', cookie)).text;
    expect(await dashboard()).not.toContain('data-testid="low-balance"');
    // 850 of 1,000 spent: the plan's 80% threshold fires; the dashboard's consumer group notes it.
    await h.leave(id, 150);
    await vi.waitFor(async () => expect(await dashboard()).toContain('data-testid="low-balance"'), { timeout: 10_000 });
    let page = await dashboard();
    expect(page).toContain('<p>On Thu, 15 Jan 2026, 80% of this cycle&#39;s credits were used.</p>');
    expect(testId(page, 'low-balance-left')).toBe('150 credits');
    expect(page).toContain('your credits renew on Sun, 15 Feb 2026.');
    // 100 left: the second threshold, listed first (the lower balance).
    await h.leave(id, 100);
    await vi.waitFor(async () => expect(await dashboard()).toContain('your balance fell to 100 credits or fewer'), { timeout: 10_000 });
    page = await dashboard();
    expect(page.indexOf('fell to 100 credits')).toBeLessThan(page.indexOf('80% of this cycle'));
    // A new cycle: nothing has fired in it.
    expect((await h.admin(`/admin/accounts/${id}/cycles`)).status).toBe(200);
    page = await dashboard();
    expect(testId(page, 'balance')).toBe('1,000');
    expect(page).not.toContain('data-testid="low-balance"');
  });

  it('a transcript: the price shown first, then fetched for 1 credit, shown, downloadable and reloadable for free', async () => {
    const { id, cookie } = await signIn();
    const form = (await get('/transcripts', cookie)).text;
    expect(testId(form, 'price')).toBe('1 credit');
    expect(testId(form, 'balance')).toBe('1,000 credits');
    const fetched = await submit(cookie, '/transcripts', '/transcripts', { video_id: VIDEO, format: 'srt' });
    expect(fetched.status).toBe(303);
    expect(fetched.headers.get('x-credits-charged')).toBe('1');
    const receipt = fetched.headers.get('location')!;
    const shown = await get(receipt, cookie);
    expect(testId(shown.text, 'balance')).toBe('999');
    expect(shown.text).toContain('00:00:01,231 --&gt; 00:00:03,654');
    const file = await get(`${receipt}/download`, cookie);
    expect(file.headers.get('content-disposition')).toBe(`attachment; filename="${VIDEO}.srt"`);
    expect(file.headers.get('content-type')).toMatch(/^application\/x-subrip/);
    expect(file.text).toMatch(/^1\n00:00:01,231 --> /);
    await get(receipt, cookie);
    expect((await credits(id)).balance).toBe(999);
    // Another account's receipt is not found.
    const other = await signIn();
    const foreign = await get(receipt, other.cookie);
    expect(foreign.status).toBe(404);
    expect(foreign.text).toContain('No saved transcript');
  });

  it('errors read as sentences, not JSON: a 402 says what is left and when the cycle renews; failures charge nothing', async () => {
    const { id, cookie } = await signIn();
    const gone = await submit(cookie, '/transcripts', '/transcripts', { video_id: 'unavail0001' });
    expect(gone.status).toBe(404);
    expect(gone.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(gone.text).toContain('Video unavail0001 is unavailable.');
    expect(gone.text).toContain('Nothing was charged.');
    const bad = await submit(cookie, '/transcripts', '/transcripts', { video_id: 'short' });
    expect(bad.status).toBe(400);
    expect(bad.text).not.toContain('"error"');
    await h.leave(id, 0);
    const broke = await submit(cookie, '/transcripts', '/transcripts', { video_id: VIDEO });
    expect(broke.status).toBe(402);
    expect(broke.text).toContain('You have 0 credits left and this needs 1. Your 1,000 credits renew on Sun, 15 Feb 2026, in 31 days.');
    expect(broke.text).toContain('Back to transcripts');
  });

  it('the 429 page says when to try again, with Retry-After, once the web budget is used up', async () => {
    const { cookie } = await signIn('tiny');
    for (let i = 0; i < 3; i++) expect((await get('/dashboard', cookie)).status).toBe(200);
    const limited = await get('/dashboard', cookie);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const retry = Number(limited.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(limited.text).toContain(`You have used all 3 website requests your plan allows this minute. Try again in ${retry} second`);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    // Assets still load, and the API key's own budget is untouched.
    expect((await h.request('/assets/site.css', { headers: { cookie } })).status).toBe(200);
    h.clock.advance(60_000);
    expect((await get('/dashboard', cookie)).status).toBe(200);
  });

  it('a collection from its form: the bounds, a progress view that polls while it runs, cancel with its refund', async () => {
    const { id, cookie } = await signIn('free');
    const form = (await get('/collections', cookie)).text;
    expect(form).toMatch(/name="limit" type="number" required min="1" max="30"/);
    for (const [limit, status, sentence] of [
      ['0', 400, 'Limit must be a whole number of credits 1..10000.'],
      ['10001', 400, 'Limit must be a whole number of credits 1..10000.'],
      ['ten', 400, 'Limit must be a whole number of credits 1..10000.'],
      ['31', 402, 'You have 30 credits left and this needs 31.'],
    ] as const) {
      const refused = await submit(cookie, '/collections', '/collections', { video_id: VIDEO, limit });
      expect(refused.status, limit).toBe(status);
      expect(refused.text, limit).toContain(sentence);
    }
    const started = await submit(cookie, '/collections', '/collections', { video_id: VIDEO, limit: '10' });
    expect(started.status).toBe(303);
    const view = started.headers.get('location')!;
    const jobId = view.split('/').pop()!;
    const running = (await get(view, cookie)).text;
    expect(running).toContain(`data-poll="/web/collections/${jobId}"`);
    expect(running).toContain('<noscript><meta http-equiv="refresh" content="5"></noscript>');
    await h.admin(`/admin/jobs/${jobId}/process`, { count: 3 });
    const canceled = await submit(cookie, view, `${view}/cancel`, {});
    expect(canceled.status).toBe(303);
    expect(canceled.headers.get('location')).toBe(view);
    const ended = (await get(view, cookie)).text;
    expect(testId(ended, 'refund')).toBe('refunded 7 credits');
    expect(ended).toContain('The collection was canceled: 3 pages collected for 3 credits, and 7 credits of the 10 reserved went back to you.');
    expect(ended).not.toContain('data-poll');
    expect(await credits(id)).toMatchObject({ balance: 27, held: 0 });
    // Its export: every saved page, free.
    const file = await get(`${view}/export`, cookie);
    expect(file.headers.get('content-disposition')).toBe(`attachment; filename="${jobId}.json"`);
    expect(JSON.parse(file.text)).toMatchObject({ job: { id: jobId, status: 'canceled', refunded: 7 }, results: expect.any(Array) });
  });

  it('bulk jobs from their form: one job per form however often it is sent, progress bars, cancel, export', async () => {
    const { id, cookie } = await signIn();
    const page = (await get('/bulk', cookie)).text;
    const key = /name="idempotency_key" value="([^"]+)"/.exec(page)![1]!;
    const fields = { csrf_token: token(page), idempotency_key: key, source: 'video_ids', ids: videoIds('vid', 6).join('\n'), include_comments: 'on' };
    const send = () =>
      h.request('/bulk', { raw: new URLSearchParams(fields).toString(), headers: { cookie, origin: h.url, 'content-type': FORM }, redirect: 'manual' });
    const first = await send();
    const again = await send();
    expect(first.status).toBe(303);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    const jobId = first.headers.get('location')!.split('#')[1]!;
    expect((await h.service.tollgate.holds.list(id)).total).toBe(1);
    expect(await credits(id)).toMatchObject({ held: 12 });
    await h.admin(`/admin/jobs/${jobId}/process`, { count: 2 });
    const listed = (await get('/bulk', cookie)).text;
    expect(listed).toMatch(/<progress max="6" value="2" data-field="progress"/);
    const canceled = await submit(cookie, '/bulk', `/bulk/${jobId}/cancel`, {});
    expect(canceled.headers.get('location')).toBe(`/bulk#${jobId}`);
    const after = (await get('/bulk', cookie)).text;
    expect(testId(after, 'refund')).toBe('refunded 8 credits');
    const file = JSON.parse((await get(`/bulk/${jobId}/export`, cookie)).text);
    expect(file.job).toMatchObject({ id: jobId, status: 'canceled', delivered: 2 });
    expect(file.results).toHaveLength(2);
    // A channel, through the same schema as POST /jobs: a bad id is its 400, as a sentence.
    const bad = await submit(cookie, '/bulk', '/bulk', { idempotency_key: 'web-other', source: 'channel_id', ids: 'UCnope' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('channel_id must be');
  });

  it('signing out from the page ends the session and goes back to /', async () => {
    const { cookie } = await signIn();
    const out = await h.request('/web/logout', { method: 'POST', raw: '', headers: { cookie, origin: h.url, 'content-type': FORM }, redirect: 'manual' });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/');
    expect(out.headers.get('set-cookie')).toMatch(/^tg_session=; Max-Age=0/);
    expect((await get('/dashboard', cookie)).status).toBe(303);
  });
});
