// Fuzzed HTTP (issues "Scale-out and faults", "Hostile input"): fast-check sends both example
// servers random methods (known and not: PUT, PATCH, OPTIONS, PROPFIND, HEAD), paths, query
// strings, headers (API keys, session cookies beside malformed ones, Idempotency-Key) and
// bodies (JSON, job and collection requests, MCP JSON-RPC, garbage, bodies nested thousands
// deep, bodies just over the size limits) under random media types and charsets, or none, as
// one account. After every request: no 5xx other than 502/503, every error in the docs/example-service.md#errors
// shape (the website answers its own forms with pages), a 405 names what is allowed, HEAD on
// a charged route is 405, and on POST /jobs with a good key a body that cannot be taken is
// 400/413/415 as its class says (or the 429 before it). After every sequence: that account's
// balance is never negative, its journal reconciles and every credit invariant holds, and a
// bystander account is exactly as it was. Each sequence starts with the client IP's failed key
// checks cleared, so a blocked IP (429) is reached within a sequence, not carried into the
// next one's set-up.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES, MAX_BODY_DEPTH, MAX_FORM_BYTES } from '../../examples/shared/http/body.ts';
import { FAILED_AUTH } from '../../examples/shared/auth/failedAuth.ts';
import type { AccountSnapshot } from '../../src/index.ts';
import { ipSubject } from '../../src/http.ts';
import { ADAPTERS, type Harness, type Reply, startHarness } from '../examples/contract/harness.ts';

const RUNS = Number(process.env.TOLLGATE_FUZZ_RUNS ?? 100);
const MINUTE = 60_000;

// ---- generators -------------------------------------------------------------------------

const ID_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-'.split('');
const idOf = (length: number) => fc.array(fc.constantFrom(...ID_CHARS), { minLength: length, maxLength: length }).map((a) => a.join(''));
/** Printable ASCII and some Latin-1: what fetch lets through in a header value. */
const headerText = (maxLength: number) =>
  fc.string({ unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff })).map((c) => String.fromCharCode(c)), maxLength });
const weird = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constantFrom('', '..', '%', '%zz', '%00', '%2F', '{x}', "' OR 1=1", '\u00e9t\u00e9', '\ud83d\ude00', 'a'.repeat(300), '__proto__', 'constructor'),
);

const videoId = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.tuple(fc.constantFrom('', 'unavail', 'nocapt', 'nocomm', 'errcomm', 'badconv'), idOf(11)).map(([p, rest]) => (p + rest).slice(0, 11)),
  },
  { weight: 1, arbitrary: weird },
);
const channelId = fc.oneof(
  idOf(22).map((s) => `UC${s}`),
  weird,
);
const playlistId = fc.oneof(
  fc
    .integer({ min: 16, max: 32 })
    .chain((n) => idOf(n))
    .map((s) => `PL${s}`),
  weird,
);

/** Job ids are resolved when the request is sent: the account's own, the bystander's, or made up. */
type JobRef = { kind: 'own'; n: number } | { kind: 'bystander' } | { kind: 'made-up'; id: string };
const jobRef: fc.Arbitrary<JobRef> = fc.oneof(
  { weight: 3, arbitrary: fc.nat().map((n) => ({ kind: 'own' as const, n })) },
  { weight: 2, arbitrary: fc.constant({ kind: 'bystander' as const }) },
  { weight: 1, arbitrary: weird.map((id) => ({ kind: 'made-up' as const, id })) },
);

type PathSpec = { template: string; parts: Array<string | JobRef> };
const path: fc.Arbitrary<PathSpec> = fc.oneof(
  videoId.map((v) => ({ template: '/transcript/$', parts: [v] })),
  videoId.map((v) => ({ template: '/api/v1/comments/$', parts: [v] })),
  fc.constant<PathSpec>({ template: '/api/v1/usage', parts: [] }),
  fc.constant<PathSpec>({ template: '/api/v1/search', parts: [] }),
  videoId.map((v) => ({ template: '/api/v1/videos/$', parts: [v] })),
  channelId.map((c) => ({ template: '/api/v1/channels/$/videos', parts: [c] })),
  playlistId.map((p) => ({ template: '/api/v1/playlists/$/videos', parts: [p] })),
  { weight: 3, arbitrary: fc.constant<PathSpec>({ template: '/jobs', parts: [] }) },
  { weight: 2, arbitrary: jobRef.map((j) => ({ template: '/jobs/$', parts: [j] })) },
  jobRef.map((j) => ({ template: '/jobs/$/results', parts: [j] })),
  fc.constant<PathSpec>({ template: '/web/login', parts: [] }),
  fc.constant<PathSpec>({ template: '/web/logout', parts: [] }),
  { weight: 2, arbitrary: fc.constant<PathSpec>({ template: '/web/collections', parts: [] }) },
  jobRef.map((j) => ({ template: '/web/collections/$', parts: [j] })),
  { weight: 3, arbitrary: fc.constant<PathSpec>({ template: '/mcp', parts: [] }) },
  fc
    .tuple(
      fc.constantFrom(
        '/admin/accounts/$/cycles',
        '/admin/accounts/$/plan',
        '/admin/jobs/$/process',
        '/admin/sweep',
        '/admin/accounts/$/grants',
        '/admin/accounts/$/grants/g1/void',
        '/admin/accounts/$/adjustments',
        '/admin/accounts/$/refunds',
      ),
      weird,
    )
    .map(([template, p]) => ({ template, parts: [p] })),
  weird.map((p) => ({ template: '/$', parts: [p] })),
);

const query = fc.oneof(
  fc.constant({}),
  fc.record(
    {
      format: fc.constantFrom('json', 'text', 'srt', 'vtt', 'xml', ''),
      sort: fc.constantFrom('top', 'newest', 'best'),
      page_token: weird,
      reply_to: weird,
      q: weird,
      offset: fc.oneof(fc.integer({ min: -5, max: 100 }).map(String), weird),
      limit: fc.oneof(fc.integer({ min: -5, max: 2000 }).map(String), weird),
    },
    { requiredKeys: [] },
  ),
  fc.dictionary(weird, weird, { maxKeys: 3 }),
);

type Auth = 'bearer' | 'x-api-key' | 'cookie' | 'bearer+cookie' | 'none' | 'garbage' | 'bad-cookie' | 'bystander-job-only';
const auth = fc.constantFrom<Auth>('bearer', 'bearer', 'x-api-key', 'cookie', 'bearer+cookie', 'none', 'garbage', 'bad-cookie');

const anyJson = fc.jsonValue({ maxDepth: 3 });
const jobBody = fc.record(
  {
    video_ids: fc.oneof(fc.array(videoId, { maxLength: 30 }), anyJson),
    channel_id: fc.oneof(channelId, anyJson),
    playlist_id: fc.oneof(playlistId, anyJson),
    include_comments: fc.oneof(fc.boolean(), anyJson),
  },
  { requiredKeys: [] },
);
const collectionBody = fc.record(
  { video_id: fc.oneof(videoId, anyJson), limit: fc.oneof(fc.integer({ min: -3, max: 12_000 }), anyJson) },
  { requiredKeys: [] },
);
const toolArgs = fc.record(
  {
    video_id: fc.oneof(videoId, anyJson),
    format: fc.oneof(fc.constantFrom('json', 'text', 'srt', 'vtt'), anyJson),
    include_comments: fc.oneof(fc.boolean(), anyJson),
    sort: fc.oneof(fc.constantFrom('top', 'newest'), anyJson),
    page_token: fc.oneof(weird, anyJson),
    video_ids: fc.oneof(fc.array(videoId, { maxLength: 10 }), anyJson),
  },
  { requiredKeys: [] },
);
const mcpBody = fc.record({
  jsonrpc: fc.constantFrom('2.0', '2.0', '1.0'),
  id: fc.oneof(fc.nat(), fc.string({ maxLength: 5 })),
  method: fc.constantFrom('tools/call', 'tools/call', 'tools/call', 'tools/list', 'initialize', 'ping', 'resources/list', 'nope'),
  params: fc.oneof(
    fc.record({ name: fc.constantFrom('get_transcript', 'get_video_comments', 'create_job', 'get_usage', 'nope'), arguments: fc.oneof(toolArgs, anyJson) }),
    fc.record({
      protocolVersion: fc.constantFrom('2025-06-18', '2024-11-05', 'x'),
      capabilities: fc.constant({}),
      clientInfo: fc.constant({ name: 'fuzz', version: '0' }),
    }),
    anyJson,
  ),
});
type Body =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown }
  | { kind: 'raw'; text: string }
  | { kind: 'login'; own: boolean }
  /** Arrays and objects nested `depth` deep. */
  | { kind: 'deep'; depth: number }
  /** A JSON body of `bytes` bytes. */
  | { kind: 'big'; bytes: number };
const deepBody: fc.Arbitrary<Body> = fc
  .oneof(fc.integer({ min: MAX_BODY_DEPTH - 2, max: MAX_BODY_DEPTH + 2 }), fc.integer({ min: 100, max: 6_000 }))
  .map((depth) => ({ kind: 'deep' as const, depth }));
const bigBody: fc.Arbitrary<Body> = fc
  .constantFrom(MAX_FORM_BYTES + 1, MAX_BODY_BYTES - 64, MAX_BODY_BYTES + 1, 3 * MAX_BODY_BYTES)
  .map((bytes) => ({ kind: 'big' as const, bytes }));
const body: fc.Arbitrary<Body> = fc.oneof(
  { weight: 1, arbitrary: deepBody },
  { weight: 1, arbitrary: bigBody },
  { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 3, arbitrary: jobBody.map((value) => ({ kind: 'json' as const, value })) },
  { weight: 2, arbitrary: collectionBody.map((value) => ({ kind: 'json' as const, value })) },
  { weight: 3, arbitrary: mcpBody.map((value) => ({ kind: 'json' as const, value })) },
  { weight: 1, arbitrary: anyJson.map((value) => ({ kind: 'json' as const, value })) },
  {
    weight: 1,
    arbitrary: fc
      .oneof(fc.string({ maxLength: 60 }), fc.constantFrom('{', '{"video_ids":', 'null', '[]', '\u0000'))
      .map((text) => ({ kind: 'raw' as const, text })),
  },
  { weight: 1, arbitrary: fc.boolean().map((own) => ({ kind: 'login' as const, own })) },
);

const request = fc.record({
  method: fc.constantFrom('GET', 'GET', 'GET', 'POST', 'POST', 'POST', 'DELETE', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'HEAD', 'OPTIONS', 'PROPFIND'),
  path,
  query,
  auth,
  idempotencyKey: fc.option(fc.oneof(fc.constantFrom('k1', 'k2', 'k3'), headerText(300)), { nil: undefined }),
  contentType: fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON; CHARSET="UTF-8"', 'application/vnd.api+json'),
    },
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        'text/plain',
        'text/plain;charset=UTF-8',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/jsonx',
        'text/html',
        '*/*',
        '',
      ),
    },
    {
      weight: 2,
      arbitrary: fc.constantFrom('utf-16', 'utf-16le', 'latin1', 'iso-8859-1', 'us-ascii', 'bogus', '').map((c) => `application/json; charset=${c}`),
    },
    { weight: 1, arbitrary: headerText(60) },
  ),
  /** Cookies sent before and after the session's, that must never turn a request into a 500. */
  cookieJunk: fc.option(
    fc.tuple(
      fc.constantFrom('tg_session=%zz', 'tg_session=%', 'tg_session=%E0%A4%A', 'tg_session="', '=;;=', 'tg_session', `big=${'x'.repeat(3_000)}`, 'a=%zz'),
      fc.boolean(),
    ),
    { nil: undefined },
  ),
  accept: fc.constantFrom(undefined, 'application/json, text/event-stream', 'text/html', '*/*'),
  extra: fc.dictionary(
    fc.constantFrom('x-request-id', 'x-forwarded-for', 'origin', 'mcp-session-id', 'mcp-protocol-version', 'x-ratelimit-limit'),
    headerText(40),
    { maxKeys: 2 },
  ),
  body,
});
type FuzzRequest = typeof request extends fc.Arbitrary<infer T> ? T : never;

/** Requests a client would really send, so the fuzz also reaches the servers' real work. */
const wellFormed: fc.Arbitrary<FuzzRequest> = fc
  .oneof<fc.Arbitrary<Pick<FuzzRequest, 'method' | 'path' | 'auth' | 'idempotencyKey' | 'body'>>[]>(
    fc
      .record({
        videos: fc.array(videoId, { minLength: 1, maxLength: 8 }),
        comments: fc.boolean(),
        key: fc.option(fc.constantFrom('k1', 'k2'), { nil: undefined }),
      })
      .map(({ videos, comments, key }) => ({
        method: 'POST' as const,
        path: { template: '/jobs', parts: [] },
        auth: 'bearer' as Auth,
        idempotencyKey: key,
        body: { kind: 'json' as const, value: { video_ids: videos, include_comments: comments } },
      })),
    fc.record({ video: videoId, limit: fc.integer({ min: 1, max: 40 }) }).map(({ video, limit }) => ({
      method: 'POST' as const,
      path: { template: '/web/collections', parts: [] },
      auth: 'cookie' as Auth,
      idempotencyKey: undefined,
      body: { kind: 'json' as const, value: { video_id: video, limit } },
    })),
    videoId.map((v) => ({
      method: 'GET' as const,
      path: { template: '/transcript/$', parts: [v] },
      auth: 'bearer' as Auth,
      idempotencyKey: undefined,
      body: { kind: 'none' as const },
    })),
    jobRef.map((j) => ({
      method: 'DELETE' as const,
      path: { template: '/jobs/$', parts: [j] },
      auth: 'x-api-key' as Auth,
      idempotencyKey: undefined,
      body: { kind: 'none' as const },
    })),
  )
  .map((r): FuzzRequest => ({ ...r, query: {}, contentType: 'application/json', cookieJunk: undefined, accept: undefined, extra: {} }));

/**
 * Hostile requests aimed at the routes that take bodies and at the charged ones, with a good
 * credential, so that every class of the hostile-input issue is reached in every run: bodies
 * too deep or too large, other media types and charsets, unknown methods, HEAD.
 */
const hostile: fc.Arbitrary<FuzzRequest> = fc
  .record({
    target: fc.constantFrom<Pick<FuzzRequest, 'method' | 'path' | 'auth'>>(
      { method: 'POST', path: { template: '/jobs', parts: [] }, auth: 'bearer' },
      { method: 'POST', path: { template: '/jobs', parts: [] }, auth: 'x-api-key' },
      { method: 'POST', path: { template: '/web/collections', parts: [] }, auth: 'cookie' },
      { method: 'POST', path: { template: '/web/login', parts: [] }, auth: 'none' },
      { method: 'POST', path: { template: '/mcp', parts: [] }, auth: 'bearer' },
      { method: 'HEAD', path: { template: '/transcript/$', parts: ['dQw4w9WgXcQ'] }, auth: 'bearer' },
      { method: 'HEAD', path: { template: '/api/v1/comments/$', parts: ['dQw4w9WgXcQ'] }, auth: 'cookie' },
      { method: 'OPTIONS', path: { template: '/jobs', parts: [] }, auth: 'bearer' },
      { method: 'PATCH', path: { template: '/web/collections', parts: [] }, auth: 'cookie' },
    ),
    body: fc.oneof(
      { weight: 2, arbitrary: deepBody },
      { weight: 2, arbitrary: bigBody },
      { weight: 1, arbitrary: body },
      { weight: 1, arbitrary: jobBody.map((value) => ({ kind: 'json' as const, value })) },
    ),
    contentType: fc.oneof({ weight: 2, arbitrary: fc.constant('application/json') }, { weight: 3, arbitrary: request.map((r) => r.contentType) }),
    cookieJunk: request.map((r) => r.cookieJunk),
    idempotencyKey: fc.option(fc.constantFrom('k1', 'k2'), { nil: undefined }),
  })
  .map(({ target, ...rest }): FuzzRequest => ({ ...target, ...rest, query: {}, accept: 'application/json, text/event-stream', extra: {} }));

const step = fc.oneof(
  { weight: 12, arbitrary: request.map((r) => ({ op: 'request' as const, r })) },
  { weight: 4, arbitrary: wellFormed.map((r) => ({ op: 'request' as const, r })) },
  { weight: 6, arbitrary: hostile.map((r) => ({ op: 'request' as const, r })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 2 * MINUTE }).map((ms) => ({ op: 'advance' as const, ms })) },
);

// ---- the run ----------------------------------------------------------------------------

describe.each(ADAPTERS)('$name server under fuzzed HTTP', (adapter) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(adapter, 'fuzz');
  });
  afterAll(async () => {
    await h?.close();
  });

  /** The bystander: an account with usage, a job and a session, never addressed by its key. */
  async function bystander(): Promise<{ id: string; jobId: string }> {
    const { id, key } = await h.account('pro');
    expect((await h.request('/transcript/dQw4w9WgXcQ', { key })).status).toBe(200);
    const job = await h.request('/jobs', { key, body: { video_ids: ['aaaaaaaaaaa', 'bbbbbbbbbbb'] } });
    expect(job.status).toBe(201);
    return { id, jobId: job.body.id };
  }

  it('never a 5xx other than 502/503, never a negative balance, invariants hold, no effect on another account', async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('free', 'starter', 'pro', 'business'), fc.array(step, { minLength: 1, maxLength: 14 }), async (plan, steps) => {
        await h.service.tollgate.limits.reset(ipSubject('127.0.0.1'), FAILED_AUTH);
        const other = await bystander();
        const startedAt = h.clock.now;
        const before: AccountSnapshot = await h.service.tollgate.accounts.inspect(other.id);
        const me = await h.account(plan);
        const login = await h.request('/web/login', { body: { api_key: me.key } });
        const session = login.headers.get('set-cookie')!.split(';')[0]!;
        const ownJobs: string[] = [];

        for (const s of steps) {
          if (s.op === 'advance') {
            h.clock.advance(s.ms);
            continue;
          }
          const reply = await send(h, s.r, { key: me.key, session, ownJobs, bystanderJob: other.jobId });
          statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
          const where = describeRequest(s.r);
          expect(reply.status < 500 || reply.status === 502 || reply.status === 503, `${reply.status} for ${where}: ${reply.text.slice(0, 300)}`).toBe(true);
          expect(brokenRule(s.r, reply), `${reply.status} for ${where}: ${reply.text.slice(0, 200)}`).toBeUndefined();
          if (reply.status >= 400 && s.r.method !== 'HEAD' && !(s.r.path.template === '/mcp' && reply.status < 500) && !websitePage(s.r)) {
            expect(reply.body?.error?.type, `error body for ${reply.status} ${where}: ${reply.text.slice(0, 200)}`).toEqual(expect.any(String));
            expect(reply.body.request_id, where).toBe(reply.headers.get('x-request-id'));
          }
          if (reply.status === 201 && typeof reply.body?.id === 'string') ownJobs.push(reply.body.id);
        }

        const mine = await h.service.tollgate.accounts.inspect(me.id);
        expect(mine.credits.balance).toBeGreaterThanOrEqual(0);
        expect(creditViolations(mine)).toEqual([]);
        expect((await h.service.tollgate.credits.reconcile(me.id)).matches).toBe(true);
        // Nothing sent as this account touched the other one: not its credits, counters or jobs
        // (read at the instant of the first reading: request counts are per window).
        const endedAt = h.clock.now;
        h.clock.now = startedAt;
        const after = await h.service.tollgate.accounts.inspect(other.id);
        h.clock.now = endedAt;
        expect(after).toEqual(before);
      }),
      { numRuns: RUNS },
    );
    // The fuzz reached the servers' real work, not only their 4xx paths.
    for (const status of [200, 201, 400, 401, 404, 405, 413, 415]) expect(statuses.get(status) ?? 0, `status ${status} reached`).toBeGreaterThan(0);
    if (process.env.TOLLGATE_FAULT_STATS) console.log(adapter.name, Object.fromEntries([...statuses].sort(([a], [b]) => a - b)));
  }, 300_000);
});

/**
 * The credit invariants (docs/credits.md#the-credit-invariant) on what Redis holds: balance + spent + held ==
 * allowance, balance >= 0, each job (hold) spends and refunds at most what it reserved and
 * holds nothing once ended, and the cycle's held is what its open jobs still hold.
 */
function creditViolations(s: AccountSnapshot): string[] {
  const out: string[] = [];
  const c = s.credits;
  if (c.balance + c.spent + c.held !== c.allowance) out.push(`balance + spent + held == allowance: ${c.balance} + ${c.spent} + ${c.held} != ${c.allowance}`);
  if (c.balance < 0) out.push(`balance >= 0: ${c.balance}`);
  let openHeld = 0;
  for (const hold of s.holds) {
    const still = hold.reserved - hold.spent - hold.refunded;
    if (still < 0) out.push(`${hold.id}: spent + refunded <= reserved`);
    if (hold.status !== 'open' && still !== 0) out.push(`${hold.id}: an ended job holds nothing, holds ${still}`);
    if (hold.status === 'open' && hold.cycleId === s.cycle.id) openHeld += still;
  }
  if (c.held !== openHeld) out.push(`held == open jobs' holds: ${c.held} != ${openHeld}`);
  return out;
}

function describeRequest(r: FuzzRequest): string {
  return `${r.method} ${r.path.template} ${JSON.stringify(r.path.parts)} auth=${r.auth} type=${JSON.stringify(r.contentType)} cookie=${JSON.stringify(r.cookieJunk)} body=${JSON.stringify(r.body).slice(0, 200)}`;
}

/** Sign-in and sign-out answer the website's forms (and a browser) with pages, not the error body. */
function websitePage(r: FuzzRequest): boolean {
  if (r.path.template !== '/web/login' && r.path.template !== '/web/logout') return false;
  return /^application\/x-www-form-urlencoded\s*(?:;|$)/i.test(r.contentType) || (r.accept ?? '').includes('text/html');
}

/** The body's text as sent: JSON, garbage, a sign-in, nesting `depth` deep, or padding to `bytes`. */
function bodyText(body: Body, key: string): string | undefined {
  switch (body.kind) {
    case 'none':
      return undefined;
    case 'json':
      return JSON.stringify(body.value);
    case 'raw':
      return body.text;
    case 'login':
      return JSON.stringify({ api_key: body.own ? key : 'tg_not_a_key' });
    case 'deep':
      return `${'{"video_ids":['.repeat(body.depth)}1${']}'.repeat(body.depth)}`;
    case 'big': {
      const frame = JSON.stringify({ video_ids: ['aaaaaaaaaaa'], pad: '' });
      return frame.replace('"pad":""', `"pad":"${'x'.repeat(Math.max(0, body.bytes - frame.length))}"`);
    }
  }
}

async function send(h: Harness, r: FuzzRequest, ctx: { key: string; session: string; ownJobs: string[]; bystanderJob: string }): Promise<Reply> {
  const part = (p: string | JobRef) => {
    if (typeof p === 'string') return encodeURIComponent(p).replace(/%25(zz|00|2F)/g, '%$1');
    if (p.kind === 'own') return ctx.ownJobs.length > 0 ? ctx.ownJobs[p.n % ctx.ownJobs.length]! : 'job_none';
    if (p.kind === 'bystander') return ctx.bystanderJob;
    return encodeURIComponent(p.id);
  };
  let i = 0;
  let url = r.path.template.replace(/\$/g, () => part(r.path.parts[i++]!));
  const search = new URLSearchParams(r.query as Record<string, string>).toString();
  if (search) url += `?${search}`;

  const headers: Record<string, string> = { ...r.extra };
  if (r.auth === 'bearer' || r.auth === 'bearer+cookie') headers.authorization = `Bearer ${ctx.key}`;
  if (r.auth === 'x-api-key') headers['x-api-key'] = ctx.key;
  if (r.auth === 'garbage') headers.authorization = `Bearer ${ctx.key.slice(0, -3)}xyz`;
  const cookies: string[] = [];
  if (r.auth === 'cookie' || r.auth === 'bearer+cookie') cookies.push(ctx.session);
  if (r.auth === 'bad-cookie') cookies.push('tg_session=not-a-session; other=1');
  if (r.cookieJunk !== undefined) {
    const [junk, before] = r.cookieJunk;
    if (before) cookies.unshift(junk);
    else cookies.push(junk);
  }
  if (cookies.length > 0) headers.cookie = cookies.join('; ');
  if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey;
  if (r.accept !== undefined) headers.accept = r.accept;
  const text = r.method === 'GET' || r.method === 'HEAD' ? undefined : bodyText(r.body, ctx.key);
  if (text !== undefined && r.contentType !== '') headers['content-type'] = r.contentType;
  // Bytes, so that fetch adds no Content-Type of its own when the request has none.
  const response = await fetch(`${h.url}${url}`, { method: r.method, headers, body: text === undefined ? undefined : new TextEncoder().encode(text) });
  const replyText = await response.text();
  const isJson = (response.headers.get('content-type') ?? '').includes('json');
  let parsed: unknown = replyText;
  if (isJson && replyText) parsed = JSON.parse(replyText);
  return { status: response.status, headers: response.headers, text: replyText, body: parsed };
}

/**
 * What a reply must be, beyond "no 5xx": the checks that follow from the request alone. Returns
 * the broken rule, or undefined.
 */
function brokenRule(r: FuzzRequest, reply: Reply): string | undefined {
  const template = r.path.template;
  const allow = reply.headers.get('allow');
  if (reply.status === 405 && (allow === null || allow.split(', ').includes(r.method)))
    return `405 without an Allow that leaves ${r.method} out (Allow: ${allow})`;
  const charged = template === '/transcript/$' || template === '/api/v1/comments/$';
  const plainPath = r.path.parts.every((p) => typeof p !== 'string' || /^[A-Za-z0-9_-]+$/.test(p));
  if (r.method === 'HEAD' && charged && plainPath && reply.status !== 405) return `HEAD on a charged route answered ${reply.status}, not 405`;
  const known = ['/jobs', '/api/v1/usage', '/api/v1/search', '/mcp', '/web/login', '/web/logout', '/web/collections'].includes(template);
  if (['PUT', 'PATCH', 'OPTIONS', 'PROPFIND'].includes(r.method) && known && reply.status !== 405)
    return `${r.method} on a known path answered ${reply.status}, not 405`;
  // POST /jobs with a good key: the body's class decides, unless a 429 came first.
  if (r.method === 'POST' && template === '/jobs' && (r.auth === 'bearer' || r.auth === 'x-api-key' || r.auth === 'bearer+cookie') && reply.status !== 429) {
    const text = bodyText(r.body, '');
    if (text === undefined || text === '') return undefined;
    const type = r.contentType.split(';')[0]!.trim().toLowerCase();
    const charset = /charset="?([^";]*)/i.exec(r.contentType)?.[1]?.toLowerCase();
    const json = /^application\/(?:[\w.+-]+\+)?json$/.test(type) && (charset === undefined || charset === 'utf-8' || charset === 'utf8');
    if (!json && reply.status !== 415) return `a ${r.contentType || 'type-less'} body answered ${reply.status}, not 415`;
    if (json && r.body.kind === 'big' && r.body.bytes > MAX_BODY_BYTES && reply.status !== 413)
      return `${r.body.bytes} bytes answered ${reply.status}, not 413`;
    if (json && r.body.kind === 'deep' && r.body.depth > MAX_BODY_DEPTH && reply.status !== 400)
      return `nesting ${r.body.depth} deep answered ${reply.status}, not 400`;
  }
  return undefined;
}
