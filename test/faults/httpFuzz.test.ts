// Fuzzed HTTP (issue "Scale-out and faults"): fast-check sends both example servers random
// methods, paths, query strings, headers (API keys, cookies, Idempotency-Key) and bodies
// (JSON, job and collection requests, MCP JSON-RPC, garbage) as one account. After every
// request: no 5xx other than 502/503 and every error in the SPEC §8 shape. After every
// sequence: that account's balance is never negative, its journal reconciles and every credit
// invariant holds, and a bystander account is exactly as it was. Each sequence starts with the
// client IP's failed key checks cleared, so a blocked IP (429) is reached within a sequence,
// not carried into the next one's set-up.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAILED_AUTH, ipSubject } from '../../examples/shared/failedAuth.ts';
import type { AccountSnapshot } from '../../src/index.ts';
import { ADAPTERS, type Harness, startHarness } from '../examples/contract/harness.ts';

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
  { weight: 4, arbitrary: fc.tuple(fc.constantFrom('', 'unavail', 'nocapt', 'nocomm', 'errcomm', 'badconv'), idOf(11)).map(([p, rest]) => (p + rest).slice(0, 11)) },
  { weight: 1, arbitrary: weird },
);
const channelId = fc.oneof(idOf(22).map((s) => `UC${s}`), weird);
const playlistId = fc.oneof(fc.integer({ min: 16, max: 32 }).chain((n) => idOf(n)).map((s) => `PL${s}`), weird);

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
  fc.tuple(fc.constantFrom('/admin/accounts/$/cycles', '/admin/accounts/$/plan', '/admin/jobs/$/process', '/admin/sweep'), weird).map(([template, p]) => ({ template, parts: [p] })),
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
    fc.record({ protocolVersion: fc.constantFrom('2025-06-18', '2024-11-05', 'x'), capabilities: fc.constant({}), clientInfo: fc.constant({ name: 'fuzz', version: '0' }) }),
    anyJson,
  ),
});
type Body = { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'raw'; text: string } | { kind: 'login'; own: boolean };
const body: fc.Arbitrary<Body> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 3, arbitrary: jobBody.map((value) => ({ kind: 'json' as const, value })) },
  { weight: 2, arbitrary: collectionBody.map((value) => ({ kind: 'json' as const, value })) },
  { weight: 3, arbitrary: mcpBody.map((value) => ({ kind: 'json' as const, value })) },
  { weight: 1, arbitrary: anyJson.map((value) => ({ kind: 'json' as const, value })) },
  { weight: 1, arbitrary: fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('{', '{"video_ids":', 'null', '[]', '\u0000')).map((text) => ({ kind: 'raw' as const, text })) },
  { weight: 1, arbitrary: fc.boolean().map((own) => ({ kind: 'login' as const, own })) },
);

const request = fc.record({
  method: fc.constantFrom('GET', 'GET', 'GET', 'POST', 'POST', 'POST', 'DELETE', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS'),
  path,
  query,
  auth,
  idempotencyKey: fc.option(fc.oneof(fc.constantFrom('k1', 'k2', 'k3'), headerText(300)), { nil: undefined }),
  contentType: fc.constantFrom('application/json', 'application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', ''),
  accept: fc.constantFrom(undefined, 'application/json, text/event-stream', 'text/html', '*/*'),
  extra: fc.dictionary(fc.constantFrom('x-request-id', 'x-forwarded-for', 'origin', 'mcp-session-id', 'mcp-protocol-version', 'x-ratelimit-limit'), headerText(40), { maxKeys: 2 }),
  body,
});
type FuzzRequest = typeof request extends fc.Arbitrary<infer T> ? T : never;

/** Requests a client would really send, so the fuzz also reaches the servers' real work. */
const wellFormed: fc.Arbitrary<FuzzRequest> = fc
  .oneof<fc.Arbitrary<Pick<FuzzRequest, 'method' | 'path' | 'auth' | 'idempotencyKey' | 'body'>>[]>(
    fc.record({ videos: fc.array(videoId, { minLength: 1, maxLength: 8 }), comments: fc.boolean(), key: fc.option(fc.constantFrom('k1', 'k2'), { nil: undefined }) }).map(({ videos, comments, key }) => ({
      method: 'POST' as const, path: { template: '/jobs', parts: [] }, auth: 'bearer' as Auth, idempotencyKey: key, body: { kind: 'json' as const, value: { video_ids: videos, include_comments: comments } },
    })),
    fc.record({ video: videoId, limit: fc.integer({ min: 1, max: 40 }) }).map(({ video, limit }) => ({
      method: 'POST' as const, path: { template: '/web/collections', parts: [] }, auth: 'cookie' as Auth, idempotencyKey: undefined, body: { kind: 'json' as const, value: { video_id: video, limit } },
    })),
    videoId.map((v) => ({ method: 'GET' as const, path: { template: '/transcript/$', parts: [v] }, auth: 'bearer' as Auth, idempotencyKey: undefined, body: { kind: 'none' as const } })),
    jobRef.map((j) => ({ method: 'DELETE' as const, path: { template: '/jobs/$', parts: [j] }, auth: 'x-api-key' as Auth, idempotencyKey: undefined, body: { kind: 'none' as const } })),
  )
  .map((r): FuzzRequest => ({ ...r, query: {}, contentType: 'application/json', accept: undefined, extra: {} }));

const step = fc.oneof(
  { weight: 12, arbitrary: request.map((r) => ({ op: 'request' as const, r })) },
  { weight: 4, arbitrary: wellFormed.map((r) => ({ op: 'request' as const, r })) },
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
          if (reply.status >= 400 && s.r.method !== 'HEAD' && !(s.r.path.template === '/mcp' && reply.status < 500)) {
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
    for (const status of [200, 201, 400, 401, 404]) expect(statuses.get(status) ?? 0, `status ${status} reached`).toBeGreaterThan(0);
    if (process.env.TOLLGATE_FAULT_STATS) console.log(adapter.name, Object.fromEntries([...statuses].sort(([a], [b]) => a - b)));
  }, 300_000);
});

/**
 * The credit invariants of SPEC §3, §6 on what Redis holds: balance + spent + held ==
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
  return `${r.method} ${r.path.template} ${JSON.stringify(r.path.parts)} auth=${r.auth} body=${JSON.stringify(r.body).slice(0, 200)}`;
}

async function send(h: Harness, r: FuzzRequest, ctx: { key: string; session: string; ownJobs: string[]; bystanderJob: string }) {
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
  if (r.auth === 'cookie' || r.auth === 'bearer+cookie') headers.cookie = ctx.session;
  if (r.auth === 'bad-cookie') headers.cookie = 'tg_session=not-a-session; other=1';
  if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey;
  if (r.accept !== undefined) headers.accept = r.accept;
  let raw: string | undefined;
  if (r.body.kind === 'json') raw = JSON.stringify(r.body.value);
  if (r.body.kind === 'raw') raw = r.body.text;
  if (r.body.kind === 'login') raw = JSON.stringify({ api_key: r.body.own ? ctx.key : 'tg_not_a_key' });
  if (r.method === 'GET' || r.method === 'HEAD') raw = undefined;
  if (raw !== undefined && r.contentType !== '') headers['content-type'] = r.contentType;
  return h.request(url, { method: r.method, raw, headers });
}
