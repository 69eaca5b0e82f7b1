// Hostile input against both example servers (docs/example-service.md): methods a route does not serve,
// HEAD on a charged route, malformed cookies, bodies of other media types, charsets and
// content codings, too large or too deep, and an Idempotency-Key whose holder stopped. Every
// refusal is the error body; nothing is charged for work that is not sent; nothing answers 500.
import http from 'node:http';
import { deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES, MAX_BODY_DEPTH, MAX_FORM_BYTES } from '../../../examples/shared/http/body.ts';
import { IDEMPOTENCY_LOCK_MS } from '../../../examples/shared/jobs/createJob.ts';
import { createFakePlatform } from '../../../examples/shared/platform/index.ts';
import type { VideoPlatform } from '../../../examples/shared/platform/types.ts';
import { connectNodeRedis } from '../../helpers/redis.ts';
import { ADAPTERS, type Harness, type Reply, startHarness } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';
const CHANNEL = `UC${'c'.repeat(22)}`;

/** The fake platform, except that a channel listing waits until the test lets it go. */
function gatedPlatform() {
  const platform = createFakePlatform();
  let open: () => void = () => {};
  let gate = Promise.resolve();
  let waiting = 0;
  const gated: VideoPlatform = Object.assign(Object.create(platform) as VideoPlatform, {
    async listChannelVideos(id: string) {
      waiting++;
      await gate;
      waiting--;
      return platform.listChannelVideos(id);
    },
  });
  return {
    platform: gated,
    close() {
      gate = new Promise((resolve) => (open = resolve));
    },
    release: () => open(),
    waiting: () => waiting,
  };
}

/** A request by hand, for what fetch will not send (TRACE, a body written slowly, a body without Content-Type). */
function rawRequest(
  url: string,
  options: { method: string; path: string; headers?: Record<string, string | number>; chunks?: Buffer[]; pauseMs?: number },
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${url}${options.path}`, { method: options.method, headers: options.headers });
    request.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
    });
    request.on('error', reject);
    (async () => {
      for (const chunk of options.chunks ?? []) {
        if (!request.write(chunk)) await new Promise((r) => request.once('drain', r));
        if (options.pauseMs) await new Promise((r) => setTimeout(r, options.pauseMs));
      }
      request.end();
    })().catch(reject);
  });
}

function expectSpecError(r: Reply, status: number, type: string) {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('content-type')).toContain('application/json');
  expect(r.body.error.type).toBe(type);
  expect(r.body.error.message).toEqual(expect.any(String));
  expect(r.body.request_id).toBe(r.headers.get('x-request-id'));
}

describe.each(ADAPTERS)('$name server: hostile input', (adapter) => {
  let h: Harness;
  let redis: Awaited<ReturnType<typeof connectNodeRedis>>;
  const gated = gatedPlatform();
  beforeAll(async () => {
    h = await startHarness(adapter, 'hostile', { platform: gated.platform });
    redis = await connectNodeRedis();
  });
  afterAll(async () => {
    gated.release();
    await redis?.close();
    await h?.close();
  });

  const balance = async (id: string) => (await h.service.tollgate.usage(id)).credits.balance;
  const session = async (key: string) => (await h.request('/web/login', { body: { api_key: key } })).headers.get('set-cookie')!.split(';')[0]!;

  describe('methods (405 method_not_allowed with Allow)', () => {
    it('HEAD on a charged route is 405 with Allow: GET and charges nothing', async () => {
      const { id, key } = await h.account('starter');
      const before = await balance(id);
      for (const path of [`/transcript/${VIDEO}`, `/api/v1/comments/${VIDEO}`]) {
        const r = await h.request(path, { method: 'HEAD', key });
        expect(r.status, path).toBe(405);
        expect(r.headers.get('allow')).toBe('GET');
        expect(r.headers.get('x-credits-charged')).toBeNull();
        expect(r.text).toBe('');
      }
      expect(await balance(id)).toBe(before);
      expect((await h.service.tollgate.usage(id)).rateLimit.remaining).toBe(100);
    });

    it('HEAD on a free route is answered as GET without a body', async () => {
      const { key } = await h.account('starter');
      for (const path of ['/api/v1/usage', `/api/v1/videos/${VIDEO}`, '/jobs']) {
        const r = await h.request(path, { method: 'HEAD', key });
        expect(r.status, path).toBe(200);
        expect(r.text).toBe('');
        expect(r.headers.get('x-ratelimit-limit')).toBe('100');
      }
    });

    it('a method a known path does not serve is 405 with the Allow of that path, in the error body', async () => {
      const { key } = await h.account('starter');
      const cases: Array<[string, string, string]> = [
        ['OPTIONS', `/transcript/${VIDEO}`, 'GET'],
        ['PATCH', '/jobs', 'GET, HEAD, POST'],
        ['PUT', '/jobs/job_x', 'GET, HEAD, DELETE'],
        ['DELETE', '/api/v1/usage', 'GET, HEAD'],
        ['POST', `/api/v1/comments/${VIDEO}`, 'GET'],
        ['GET', '/mcp', 'POST'],
        ['DELETE', '/mcp', 'POST'],
        ['HEAD', '/mcp', 'POST'],
        ['GET', '/web/login', 'POST'],
        ['OPTIONS', '/admin/accounts', 'POST'],
      ];
      for (const [method, path, allow] of cases) {
        const r = await h.request(path, { method, key });
        expect(r.status, `${method} ${path}`).toBe(405);
        expect(r.headers.get('allow'), `${method} ${path}`).toBe(allow);
        if (method !== 'HEAD') expectSpecError(r, 405, 'method_not_allowed');
      }
    });

    it('TRACE is 405 too; an unknown path stays 404', async () => {
      const trace = await rawRequest(h.url, { method: 'TRACE', path: '/jobs' });
      expect(trace.status).toBe(405);
      expect(trace.headers.allow).toBe('GET, HEAD, POST');
      expect(JSON.parse(trace.text).error.type).toBe('method_not_allowed');
      const unknown = await h.request('/nowhere', { method: 'OPTIONS' });
      expectSpecError(unknown, 404, 'not_found');
    });
  });

  describe('cookies (parsed by `cookie`)', () => {
    it('a malformed session cookie is treated as absent: 401 on the website, the key alone elsewhere, never 500', async () => {
      const { key } = await h.account('starter');
      for (const cookie of ['tg_session=%zz', 'tg_session=%', 'tg_session=%E0%A4%A', 'a=%zz; tg_session=%zz; b']) {
        const web = await h.request('/web/collections', { body: { video_id: VIDEO, limit: 1 }, headers: { cookie } });
        expectSpecError(web, 401, 'unauthorized');
        const read = await h.request('/jobs/job_x', { headers: { cookie } });
        expectSpecError(read, 401, 'unauthorized');
        const withKey = await h.request('/api/v1/usage', { key, headers: { cookie } });
        expect(withKey.status, cookie).toBe(200);
        const logout = await h.request('/web/logout', { method: 'POST', headers: { cookie } });
        expect(logout.status, cookie).toBe(200);
      }
    });

    it('a good session beside a malformed cookie still works', async () => {
      const { key } = await h.account('starter');
      const good = await session(key);
      const r = await h.request('/api/v1/usage', { headers: { cookie: `junk=%zz; ${good}` } });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('100');
    });
  });

  describe('bodies: nesting (400 invalid_request after authentication, never 5xx)', () => {
    const deep = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

    it('POST /jobs with a body nested 5,000 deep is 400 with or without an Idempotency-Key; 401 first without a key', async () => {
      const { key } = await h.account('pro');
      for (const headers of [{}, { 'idempotency-key': 'deep-1' }] as Record<string, string>[]) {
        const r = await h.request('/jobs', { key, raw: deep(5_000), headers });
        expectSpecError(r, 400, 'invalid_request');
        expect(r.body.error.param).toBe('body');
        expect(r.headers.get('x-ratelimit-limit')).toBe('300');
      }
      const anonymous = await h.request('/jobs', { raw: deep(5_000) });
      expectSpecError(anonymous, 401, 'unauthorized');
      // The key was not claimed by the refused request: a good body goes through with it.
      const ok = await h.request('/jobs', { key, body: { video_ids: [VIDEO] }, headers: { 'idempotency-key': 'deep-1' } });
      expect(ok.status).toBe(201);
    });

    it('a body the fingerprint refuses (a lone surrogate, not I-JSON) is 400 with an Idempotency-Key, not 500', async () => {
      const { key } = await h.account('pro');
      const lone = await h.request('/jobs', { key, raw: '{"video_ids":["\\ud800aaaaaaaaaa"]}', headers: { 'idempotency-key': 'lone-1' } });
      expectSpecError(lone, 400, 'invalid_request');
      expect(lone.body.error.message).toContain('lone surrogate');
    });

    it(`${MAX_BODY_DEPTH} levels are read; one more is 400 on every route that takes a body`, async () => {
      const { key } = await h.account('pro');
      const atLimit = await h.request('/jobs', { key, raw: deep(MAX_BODY_DEPTH) });
      expectSpecError(atLimit, 400, 'invalid_request');
      expect(atLimit.body.error.param).not.toBe('body'); // read, then refused by the schema
      const cookie = await session(key);
      const tooDeep = deep(MAX_BODY_DEPTH + 1);
      for (const [path, headers] of [
        ['/jobs', { authorization: `Bearer ${key}` }],
        ['/web/collections', { cookie }],
        ['/web/login', {}],
        ['/mcp', { authorization: `Bearer ${key}`, accept: 'application/json, text/event-stream' }],
      ] as const) {
        const r = await h.request(path, { raw: tooDeep, headers });
        expectSpecError(r, 400, 'invalid_request');
        expect(r.body.error.message, path).toContain(`deeper than ${MAX_BODY_DEPTH}`);
      }
    });
  });

  describe('bodies: media types and charsets (415 unsupported_media_type; UTF-8 only)', () => {
    it('a text/plain, form or type-less body on a JSON route is 415, even with a valid session cookie and no key; no job is made', async () => {
      const { id, key } = await h.account('pro');
      const cookie = await session(key);
      const body = JSON.stringify({ video_ids: [VIDEO] });
      for (const type of [
        'text/plain',
        'text/plain;charset=UTF-8',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/jsonx',
      ]) {
        const r = await h.request('/jobs', { raw: body, headers: { cookie, 'content-type': type } });
        expectSpecError(r, 415, 'unsupported_media_type');
        expect(r.body.error.param).toBe('body');
      }
      const typeless = await rawRequest(h.url, {
        method: 'POST',
        path: '/jobs',
        headers: { cookie, 'content-length': Buffer.byteLength(body) },
        chunks: [Buffer.from(body)],
      });
      expect(typeless.status).toBe(415);
      expect(JSON.parse(typeless.text).error.type).toBe('unsupported_media_type');
      expect((await h.service.tollgate.holds.list(id)).total).toBe(0);
    });

    it('415 comes after authentication: without a credential it is 401', async () => {
      const r = await h.request('/jobs', { raw: '{}', headers: { 'content-type': 'text/plain' } });
      expectSpecError(r, 401, 'unauthorized');
    });

    it('charset utf-8 (any case, quoted or not) is read; utf-16, latin1 and others are 415 on both servers alike', async () => {
      const { key } = await h.account('pro');
      for (const type of [
        'application/json; charset=utf-8',
        'application/json;charset="UTF-8"',
        'application/json; charset=utf8',
        'application/vnd.api+json',
      ]) {
        const r = await h.request('/jobs', { key, body: { video_ids: [VIDEO] }, headers: { 'content-type': type } });
        expect(r.status, type).toBe(201);
      }
      for (const charset of ['utf-16', 'utf-16le', 'latin1', 'iso-8859-1', 'us-ascii', 'bogus']) {
        const r = await h.request('/jobs', { key, body: { video_ids: [VIDEO] }, headers: { 'content-type': `application/json; charset=${charset}` } });
        expectSpecError(r, 415, 'unsupported_media_type');
        expect(r.body.error.message).toContain('UTF-8');
      }
    });

    it('bytes that are not UTF-8, and text that is not JSON, are 400', async () => {
      const { key } = await h.account('pro');
      const latin1 = Buffer.from('{"video_ids":["caf\xe9"]}', 'latin1');
      const r = await rawRequest(h.url, {
        method: 'POST',
        path: '/jobs',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': latin1.length },
        chunks: [latin1],
      });
      expect(r.status).toBe(400);
      expect(JSON.parse(r.text).error.message).toContain('UTF-8');
      expectSpecError(await h.request('/jobs', { key, raw: '{"video_ids":' }), 400, 'invalid_request');
    });

    it('a request without a body is not affected by its Content-Type', async () => {
      const { key } = await h.account('pro');
      const job = await h.request('/jobs', { key, body: { video_ids: [VIDEO] } });
      const cancel = await h.request(`/jobs/${job.body.id}`, { method: 'DELETE', key, headers: { 'content-type': 'text/plain' } });
      expect(cancel.status).toBe(200);
      const logout = await h.request('/web/logout', { method: 'POST', headers: { 'content-type': 'text/plain' } });
      expect(logout.status).toBe(200);
    });
  });

  describe('bodies: size (413 payload_too_large, the body read so the client sees it)', () => {
    const big = (bytes: number) => JSON.stringify({ video_ids: [VIDEO], pad: 'x'.repeat(bytes) });

    it(`a body over ${MAX_BODY_BYTES} bytes is 413 on POST /jobs and on /web/login (not 401), in the error body`, async () => {
      const { key } = await h.account('pro');
      const jobs = await h.request('/jobs', { key, raw: big(MAX_BODY_BYTES) });
      expectSpecError(jobs, 413, 'payload_too_large');
      const login = await h.request('/web/login', { raw: big(MAX_BODY_BYTES) });
      expectSpecError(login, 413, 'payload_too_large');
      // Just under the limit is read (and refused by the schema, not by size).
      const under = await h.request('/jobs', { key, raw: big(MAX_BODY_BYTES - 100) });
      expect(under.status).toBe(400);
    });

    it(`a form over ${MAX_FORM_BYTES} bytes on sign-in is 413 too; a form under it is read as a form, a form on a JSON route is 415`, async () => {
      const { key } = await h.account('pro');
      const form = (pad: number) => new URLSearchParams({ api_key: key, pad: 'x'.repeat(pad) }).toString();
      const headers = { 'content-type': 'application/x-www-form-urlencoded', origin: h.url };
      const tooLarge = await h.request('/web/login', { raw: form(MAX_FORM_BYTES), headers });
      expect(tooLarge.status).toBe(413);
      const read = await h.request('/web/login', { raw: form(10), headers });
      expect(read.status).not.toBe(413);
      expect(read.status).not.toBe(415);
      const onJson = await h.request('/jobs', { key, raw: form(10), headers });
      expectSpecError(onJson, 415, 'unsupported_media_type');
    });

    it('an over-limit body written slowly in chunks, without a length, gets the 413 and the connection stays usable', async () => {
      const { key } = await h.account('pro');
      const chunk = Buffer.alloc(256 * 1024, 0x20);
      const r = await rawRequest(h.url, {
        method: 'POST',
        path: '/jobs',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        chunks: Array.from({ length: 8 }, () => chunk),
        pauseMs: 5,
      });
      expect(r.status).toBe(413);
      expect(JSON.parse(r.text).error.type).toBe('payload_too_large');
      expect(r.headers.connection).not.toBe('close');
    });
  });

  describe('bodies: Content-Encoding (identity read; gzip and deflate decoded within the size limit; others 415)', () => {
    const jobBody = Buffer.from(JSON.stringify({ video_ids: [VIDEO] }));
    const post = (key: string | undefined, encoding: string, bytes: Buffer, path = '/jobs') =>
      rawRequest(h.url, {
        method: 'POST',
        path,
        headers: {
          ...(key ? { authorization: `Bearer ${key}` } : {}),
          'content-type': 'application/json',
          'content-encoding': encoding,
          'content-length': bytes.length,
        },
        chunks: [bytes],
      });
    const errorOf = (r: { text: string }) => JSON.parse(r.text) as { error: { type: string; message: string; param?: string } };

    it('identity is read as a body without Content-Encoding is; gzip, x-gzip and deflate are decoded, on POST /jobs and /web/login', async () => {
      const { id, key } = await h.account('business'); // room for 9 open jobs
      for (const [encoding, bytes] of [
        ['identity', jobBody],
        ['Identity', jobBody],
        ['gzip', gzipSync(jobBody)],
        ['x-gzip', gzipSync(jobBody)],
        ['GZIP', gzipSync(jobBody)],
        ['deflate', deflateSync(jobBody)],
        ['gzip, identity', gzipSync(jobBody)],
        ['deflate, gzip', gzipSync(deflateSync(jobBody))],
      ] as const) {
        const r = await post(key, encoding, bytes);
        expect(r.status, `${encoding}: ${r.text}`).toBe(201);
      }
      // Sent in small pieces without a length, as a streaming client would: decoded as it comes.
      const gzipped = gzipSync(jobBody);
      const streamed = await rawRequest(h.url, {
        method: 'POST',
        path: '/jobs',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-encoding': 'gzip', 'transfer-encoding': 'chunked' },
        chunks: Array.from({ length: Math.ceil(gzipped.length / 7) }, (_, at) => gzipped.subarray(at * 7, at * 7 + 7)),
        pauseMs: 1,
      });
      expect(streamed.status, streamed.text).toBe(201);
      expect((await h.service.tollgate.holds.list(id)).total).toBe(9);
      const login = await post(undefined, 'deflate', deflateSync(JSON.stringify({ api_key: key })), '/web/login');
      expect(login.status, login.text).toBe(200);
      expect(String(login.headers['set-cookie'])).toContain('tg_session=');
    });

    it('the size limit counts decoded bytes: a gzip bomb is 413 while a body just under the limit is read; the connection stays usable', async () => {
      const { id, key } = await h.account('pro');
      const padded = (bytes: number) => Buffer.from(JSON.stringify({ video_ids: [VIDEO], pad: ' '.repeat(bytes) }));
      const over = gzipSync(padded(MAX_BODY_BYTES));
      expect(over.length).toBeLessThan(MAX_BODY_BYTES / 100);
      const tooLarge = await post(key, 'gzip', over);
      expect(tooLarge.status).toBe(413);
      expect(errorOf(tooLarge).error.type).toBe('payload_too_large');
      expect(errorOf(tooLarge).error.param).toBe('body');
      expect(tooLarge.headers.connection).not.toBe('close');
      // 64 MiB of spaces in 64 KiB of deflate: refused after the first MiB, never inflated whole.
      const bomb = deflateSync(Buffer.concat([Buffer.from('{"video_ids":["dQw4w9WgXcQ"],"pad":"'), Buffer.alloc(64 * 1024 * 1024, 0x20), Buffer.from('"}')]));
      const started = Date.now();
      const bombed = await post(key, 'deflate', bomb);
      expect(bombed.status).toBe(413);
      expect(Date.now() - started).toBeLessThan(5_000);
      const under = await post(key, 'gzip', gzipSync(padded(MAX_BODY_BYTES - 100)));
      expect(under.status).toBe(400); // read, then refused by the schema for its unknown field
      expect(errorOf(under).error.message).toContain('pad');
      expect((await h.service.tollgate.holds.list(id)).total).toBe(0);
    });

    it('any other coding is 415 with Accept-Encoding: gzip, deflate, after authentication; no job is made', async () => {
      const { id, key } = await h.account('pro');
      for (const encoding of ['br', 'zstd', 'compress', 'gzip, br', 'bogus']) {
        const r = await post(key, encoding, jobBody);
        expect(r.status, encoding).toBe(415);
        expect(r.headers['accept-encoding'], encoding).toBe('gzip, deflate');
        expect(errorOf(r).error).toMatchObject({ type: 'unsupported_media_type', param: 'body' });
        expect(errorOf(r).error.message).toContain(encoding.split(', ').at(-1)!);
      }
      expect((await post(undefined, 'br', jobBody)).status).toBe(401);
      expect((await h.service.tollgate.holds.list(id)).total).toBe(0);
    });

    it('a body that is not what its Content-Encoding says is 400, never read as plain JSON; no job is made', async () => {
      const { id, key } = await h.account('pro');
      const gzipped = gzipSync(jobBody);
      for (const [encoding, bytes] of [
        ['gzip', jobBody],
        ['deflate', jobBody],
        ['deflate', gzipped],
        ['gzip', gzipped.subarray(0, gzipped.length - 6)],
        ['gzip, gzip', gzipped],
      ] as const) {
        const r = await post(key, encoding, bytes);
        expect(r.status, `${encoding}: ${r.text}`).toBe(400);
        expect(errorOf(r).error).toMatchObject({ type: 'invalid_request', param: 'body' });
        expect(errorOf(r).error.message).toContain('Content-Encoding');
      }
      expect((await h.service.tollgate.holds.list(id)).total).toBe(0);
    });
  });

  describe('Idempotency-Key in use', () => {
    it('409 idempotency_key_in_use carries Retry-After; a claim left by a stopped holder frees the key within 5 s', async () => {
      const { id, key } = await h.account('pro');
      const body = { video_ids: [VIDEO] };
      // A server that crashed after claiming the key, before opening the job.
      const crashed = await h.service.tollgate.idempotency.begin(id, 'crash-1', body);
      expect(crashed.state).toBe('new');
      const busy = await h.request('/jobs', { key, body, headers: { 'idempotency-key': 'crash-1' } });
      expectSpecError(busy, 409, 'idempotency_key_in_use');
      expect(busy.headers.get('retry-after')).toBe('1');
      h.clock.advance(IDEMPOTENCY_LOCK_MS);
      const created = await h.request('/jobs', { key, body, headers: { 'idempotency-key': 'crash-1' } });
      expect(created.status).toBe(201);
      const replay = await h.request('/jobs', { key, body, headers: { 'idempotency-key': 'crash-1' } });
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect((await h.service.tollgate.holds.list(id)).total).toBe(1);
    });

    it('a server still resolving the videos renews its claim: past the lease a duplicate still gets 409, then the replay', async () => {
      const { id, key } = await h.account('pro');
      const body = { channel_id: CHANNEL };
      const headers = { 'idempotency-key': 'slow-1' };
      gated.close();
      const first = h.request('/jobs', { key, body, headers });
      try {
        while (gated.waiting() === 0) await new Promise((r) => setTimeout(r, 10));
        // The claim's lease end, as the library keeps it (lua/lib/idempotency.lua).
        const records = await redis.keys(`*{${id}}:ik:slow-1`);
        expect(records).toHaveLength(1);
        const lease = async () => Number(await redis.hGet(records[0]!, 'exp'));
        const claimedUntil = await lease();
        // Well past the first lease, on the server's clock; the holder's next renewal extends it.
        h.clock.advance(IDEMPOTENCY_LOCK_MS - 1);
        while ((await lease()) === claimedUntil) await new Promise((r) => setTimeout(r, 50));
        h.clock.advance(2);
        const duplicate = await h.request('/jobs', { key, body, headers });
        expectSpecError(duplicate, 409, 'idempotency_key_in_use');
      } finally {
        gated.release();
      }
      const created = await first;
      expect(created.status).toBe(201);
      const again = await h.request('/jobs', { key, body, headers });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect((await h.service.tollgate.holds.list(id)).total).toBe(1);
    }, 20_000);
  });
});
