// Failed key checks per client IP (issue "Limits for any subject", item 8), over real HTTP
// against both example servers: every 401 that answers a credential that did not check out
// counts one attempt for the IP, 10 a minute by default; past them the IP gets 429
// rate_limited with Retry-After (error body) on every route, whatever it presents, until the
// window resets. Successful requests and sign-ins never count, nor does a request that
// presents nothing. All requests here come from 127.0.0.1.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ipSubject } from '../../../src/http.ts';
import { FAILED_AUTH } from '../../../examples/shared/auth/failedAuth.ts';
import { ADAPTERS, ADMIN_TOKEN, type Harness, type Reply, startHarness } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';
const MCP_ACCEPT = { accept: 'application/json, text/event-stream' };
const TOOLS_LIST = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

function expectTooMany(r: Reply, where = ''): void {
  expect(r.status, `${where}: ${r.text.slice(0, 200)}`).toBe(429);
  expect(r.headers.get('content-type'), where).toContain('application/json');
  expect(r.body.error, where).toMatchObject({ type: 'rate_limited', message: 'Rate limit exceeded' });
  expect(r.body.request_id, where).toMatch(/^req_/);
  expect(r.headers.get('x-request-id'), where).toBe(r.body.request_id);
  const retry = Number(r.headers.get('retry-after'));
  expect(retry, where).toBeGreaterThanOrEqual(1);
  expect(retry, where).toBeLessThanOrEqual(60);
}

const wrongSecret = (key: string) => key.slice(0, -4) + (key.endsWith('aaaa') ? 'bbbb' : 'aaaa');

describe.each(ADAPTERS)('$name server: failed key checks per client IP', (adapter) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(adapter, 'failed-auth');
  });
  beforeEach(async () => {
    // Each test starts in a fresh minute, with nothing counted for the IP.
    h.clock.advance(60_000);
    await h.service.tollgate.limits.reset(ipSubject('127.0.0.1'), FAILED_AUTH);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('10 failed checks a minute are 401s; the 11th is 429 rate_limited with Retry-After, and the IP is refused, a valid key included, until the window resets', async () => {
    const { key } = await h.account('starter');
    const wrong = wrongSecret(key);
    for (let i = 0; i < 10; i++) {
      const r = await h.request('/api/v1/search?q=a', { key: wrong });
      expect(r.status, `attempt ${i + 1}`).toBe(401);
      expect(r.headers.get('x-ratelimit-limit')).toBeNull();
    }
    const over = await h.request('/api/v1/search?q=a', { key: wrong });
    expectTooMany(over, 'the 11th failed check');
    expectTooMany(await h.request(`/transcript/${VIDEO}`, { key }), 'a valid key from the blocked IP');
    expectTooMany(await h.request('/api/v1/usage', { headers: { 'x-api-key': key } }), 'a usage poll from the blocked IP');

    h.clock.advance(Number(over.headers.get('retry-after')) * 1000);
    expect((await h.request('/api/v1/search?q=a', { key })).status).toBe(200);
    expect((await h.request('/api/v1/search?q=a', { key: wrong })).status).toBe(401);
  });

  it('every kind of failed check counts, on every route: API key, X-API-Key, OAuth token, session cookie, sign-in, MCP, admin token', async () => {
    const { key } = await h.account('starter');
    const login = await h.request('/web/login', { body: { api_key: key } });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const failures: Array<[string, () => Promise<Reply>]> = [
      ['a wrong API key (Bearer)', () => h.request(`/transcript/${VIDEO}`, { key: wrongSecret(key) })],
      ['a malformed X-API-Key', () => h.request('/jobs', { headers: { 'x-api-key': 'nope' } })],
      ['a bad OAuth token', () => h.request('/api/v1/search?q=a', { key: 'oat_bm9wZQ.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })],
      ['a forged session cookie', () => h.request('/web/collections', { body: { video_id: VIDEO, limit: 1 }, headers: { cookie: wrongSecret(cookie) } })],
      ['an API key as the session cookie', () => h.request('/api/v1/usage', { headers: { cookie: `tg_session=${key}` } })],
      ['a session key as an API key', () => h.request('/api/v1/usage', { key: cookie.slice('tg_session='.length) })],
      ['a failed sign-in', () => h.request('/web/login', { body: { api_key: wrongSecret(key) } })],
      ['MCP with a wrong key', () => h.request('/mcp', { key: wrongSecret(key), body: TOOLS_LIST, headers: MCP_ACCEPT })],
      ['a wrong admin token', () => h.request('/admin/sweep', { method: 'POST', body: {}, headers: { authorization: 'Bearer not-the-token' } })],
      ['a wrong API key on a job', () => h.request('/jobs/job_x', { key: wrongSecret(key), method: 'DELETE' })],
    ];
    expect(failures).toHaveLength(10);
    for (const [what, send] of failures) expect((await send()).status, what).toBe(401);
    expectTooMany(await h.request('/mcp', { key: wrongSecret(key), body: TOOLS_LIST, headers: MCP_ACCEPT }), 'MCP, the 11th');
    // Blocked on every route before the credential is looked at.
    expectTooMany(await h.request('/web/login', { body: { api_key: key } }), 'sign-in');
    expectTooMany(await h.request('/api/v1/search?q=a', { headers: { cookie } }), 'a valid session');
    expectTooMany(await h.request('/mcp', { key, body: TOOLS_LIST, headers: MCP_ACCEPT }), 'MCP with a valid key');
    expectTooMany(await h.request('/admin/sweep', { method: 'POST', body: {}, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }), 'admin');
  });

  it('successful requests and sign-ins never count, nor does a request that presents no credential', async () => {
    const { key } = await h.account('business');
    for (let i = 0; i < 15; i++) {
      expect((await h.request('/web/login', { body: { api_key: key } })).status).toBe(200);
      expect((await h.request('/api/v1/search?q=a', { key })).status).toBe(200);
      expect((await h.request('/api/v1/search?q=a')).status).toBe(401);
      expect((await h.request('/web/login', { body: {} })).status).toBe(401);
    }
    for (let i = 0; i < 10; i++) expect((await h.request('/api/v1/search?q=a', { key: wrongSecret(key) })).status).toBe(401);
    expectTooMany(await h.request('/api/v1/search?q=a', { key: wrongSecret(key) }));
  });

  describe('the host sets the number (failedAuthPerMinute)', () => {
    let strict: Harness;
    beforeAll(async () => {
      strict = await startHarness(adapter, 'failed-auth-3', { failedAuthPerMinute: 3 });
    });
    afterAll(async () => {
      await strict?.close();
    });

    it('3 a minute: the 4th failed check is 429', async () => {
      const { key } = await strict.account('starter');
      for (let i = 0; i < 3; i++) expect((await strict.request('/api/v1/search?q=a', { key: wrongSecret(key) })).status).toBe(401);
      expectTooMany(await strict.request('/api/v1/search?q=a', { key: wrongSecret(key) }));
      expectTooMany(await strict.request('/api/v1/search?q=a', { key }));
    });
  });
});
