// The MCP endpoint, driven by the SDK's own Client over Streamable HTTP against both
// example servers: tools and their charges, the `api` counter shared with REST (API key and
// OAuth token alike), housekeeping and get_usage that count nothing, output schemas with
// structuredContent and tool hints, and 401/429 as HTTP responses.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ADAPTERS, type Harness, startHarness, videoIds } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';

describe.each(ADAPTERS)('$name server: MCP contract', (adapter) => {
  let h: Harness;
  const clients: Client[] = [];
  beforeAll(async () => {
    h = await startHarness(adapter, 'mcp');
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await h?.close();
  });

  async function connect(token: string): Promise<Client> {
    const client = new Client({ name: 'contract-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  }

  /** A tool's value: its structuredContent on success (the same as its JSON text), the error object as text on error. */
  async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
    const result = (await client.callTool({ name, arguments: args })) as {
      isError?: boolean;
      structuredContent?: Record<string, unknown>;
      content: Array<{ type: string; text: string }>;
    };
    const text = JSON.parse(result.content[0]!.text);
    if (result.isError === true) expect(result.structuredContent).toBeUndefined();
    else expect(result.structuredContent).toEqual(text);
    return { isError: result.isError === true, value: text };
  }

  const apiRemaining = async (key: string) => Number((await h.request('/api/v1/usage', { key })).headers.get('x-ratelimit-remaining'));
  const balance = async (id: string) => (await h.service.tollgate.usage(id)).credits.balance;

  it('lists the four tools; initialize and tools/list count nothing', async () => {
    const { key } = await h.account('starter');
    const client = await connect(key);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['create_job', 'get_transcript', 'get_usage', 'get_video_comments']);
    expect(await apiRemaining(key)).toBe(100);
  });

  it('each tools/call counts one request on the api counter REST uses; get_usage is free like GET /api/v1/usage', async () => {
    const { key } = await h.account('starter');
    const client = await connect(key);
    const usage = await call(client, 'get_usage');
    expect(usage.isError).toBe(false);
    expect(usage.value).toMatchObject({ plan: 'starter', credits: { balance: 1000 }, rate_limit: { limit: 100, remaining: 100 } });
    await call(client, 'get_transcript', { video_id: VIDEO });
    await h.request('/api/v1/search?q=x', { key });
    for (let i = 0; i < 5; i++) await call(client, 'get_usage');
    expect((await call(client, 'get_usage')).value).toMatchObject({ credits: { balance: 999 }, rate_limit: { remaining: 98 } });
    expect(await apiRemaining(key)).toBe(98);
  });

  it('every tool declares an output schema and its hints: only get_usage is read-only and idempotent', async () => {
    const { key } = await h.account('starter');
    const { tools } = await (await connect(key)).listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const tool of tools) {
      expect(tool.outputSchema, tool.name).toMatchObject({ type: 'object', properties: expect.any(Object) });
      expect(tool.annotations, tool.name).toMatchObject({ readOnlyHint: expect.any(Boolean), idempotentHint: expect.any(Boolean) });
    }
    expect(byName.get_usage!.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });
    for (const name of ['get_transcript', 'get_video_comments', 'create_job']) {
      expect(byName[name]!.annotations, name).toMatchObject({ readOnlyHint: false, idempotentHint: false, destructiveHint: false });
    }
    expect(Object.keys(byName.get_transcript!.outputSchema!.properties!)).toEqual(
      expect.arrayContaining(['video_id', 'format', 'transcript', 'comments', 'comments_status', 'credits_charged']),
    );
    expect(Object.keys(byName.create_job!.outputSchema!.properties!).sort()).toEqual(['idempotent_replayed', 'job']);
    expect(Object.keys(byName.get_usage!.outputSchema!.properties!).sort()).toEqual(['credits', 'cycle', 'grants', 'jobs', 'plan', 'rate_limit']);
  });

  it('a success carries structuredContent that matches the output schema; the REST body and the tool agree', async () => {
    const { key } = await h.account('starter');
    const client = await connect(key);
    // The SDK client checks structuredContent against the listed outputSchema itself.
    await client.listTools();
    const raw = await client.callTool({ name: 'get_usage', arguments: {} });
    const rest = await h.request('/api/v1/usage', { key });
    expect({ ...(raw.structuredContent as object), rate_limit: null }).toEqual({ ...rest.body, rate_limit: null });
    const job = await client.callTool({ name: 'create_job', arguments: { video_ids: videoIds('vid', 2) } });
    const id = (job.structuredContent as { job: { id: string } }).job.id;
    expect((job.structuredContent as { job: unknown }).job).toEqual((await h.request(`/jobs/${id}`, { key })).body);
    const comments = await client.callTool({ name: 'get_video_comments', arguments: { video_id: VIDEO } });
    expect(comments.structuredContent).toMatchObject({ video_id: VIDEO, sort: 'top', credits_charged: 1, next_page_token: expect.any(String) });
  });

  it('get_usage adds what is available and the grants in spend order, as GET /api/v1/usage does; a tool charge draws from the first', async () => {
    const { id, key } = await h.account('starter');
    const expiresAt = new Date(h.clock.now + 3 * 86_400_000).toISOString();
    await h.admin(`/admin/accounts/${id}/grants`, { amount: 20, kind: 'promotional', expires_at: expiresAt, operation_id: 'promo_mcp' });
    const client = await connect(key);
    const charged = await call(client, 'get_transcript', { video_id: VIDEO, include_comments: true });
    expect(charged.value.credits_charged).toBe(2);
    const usage = await call(client, 'get_usage');
    expect(usage.value.credits).toEqual({
      allowance: 1000,
      balance: 1000,
      spent: 0,
      held: 0,
      available: 1018,
      next_expiry: { grant_id: 'g1', expires_at: expiresAt, amount: 18 },
    });
    expect(usage.value.grants.map((g: { grant_id: string; remaining: number }) => [g.grant_id, g.remaining])).toEqual([
      ['g1', 18],
      ['cycle:1', 1000],
    ]);
    const rest = await h.request('/api/v1/usage', { key });
    expect({ ...usage.value, rate_limit: null }).toEqual({ ...rest.body, rate_limit: null });
  });

  it('get_transcript costs 1; with include_comments 2 when the Top page is nonempty', async () => {
    const { id, key } = await h.account('starter');
    const client = await connect(key);
    const plain = await call(client, 'get_transcript', { video_id: VIDEO, format: 'srt' });
    expect(plain.value).toMatchObject({ video_id: VIDEO, format: 'srt', credits_charged: 1, comments: null });
    expect(plain.value.transcript).toMatch(/-->/);
    const both = await call(client, 'get_transcript', { video_id: VIDEO, include_comments: true });
    expect(both.value).toMatchObject({ credits_charged: 2, comments_status: 'delivered' });
    expect(both.value.comments.comments).toHaveLength(20);
    expect(await balance(id)).toBe(997);
  });

  it('only 1 credit when comments fail or come back empty, and the transcript is kept', async () => {
    const { id, key } = await h.account('starter');
    const client = await connect(key);
    const failed = await call(client, 'get_transcript', { video_id: 'errcomm0001', include_comments: true });
    expect(failed.isError).toBe(false);
    expect(failed.value).toMatchObject({ credits_charged: 1, comments_status: 'failed', comments: null });
    expect(failed.value.transcript.segments.length).toBeGreaterThan(0);
    const empty = await call(client, 'get_transcript', { video_id: 'nocomm00001', include_comments: true });
    expect(empty.value).toMatchObject({ credits_charged: 1, comments_status: 'empty' });
    expect(await balance(id)).toBe(998);
  });

  it('only 1 credit when only 1 is left after the transcript', async () => {
    const { id, key } = await h.account('starter');
    await h.leave(id, 1);
    const client = await connect(key);
    const r = await call(client, 'get_transcript', { video_id: VIDEO, include_comments: true });
    expect(r.value).toMatchObject({ credits_charged: 1, comments_status: 'insufficient_credits', comments: null });
    expect(r.value.transcript.video_id).toBe(VIDEO);
    expect(await balance(id)).toBe(0);
  });

  it('credit errors are tool results with isError and the error object; failed fetches charge nothing', async () => {
    const { id, key } = await h.account('free');
    const client = await connect(key);
    const gone = await call(client, 'get_transcript', { video_id: 'unavail0001' });
    expect(gone.isError).toBe(true);
    expect(gone.value.error.type).toBe('video_unavailable');
    expect(gone.value.request_id).toMatch(/^req_/);
    expect(await balance(id)).toBe(30);
    await h.leave(id, 0);
    const broke = await call(client, 'get_transcript', { video_id: VIDEO });
    expect(broke.isError).toBe(true);
    expect(broke.value.error).toMatchObject({ type: 'insufficient_quota', remaining: 0, needed: 1 });
    const comments = await call(client, 'get_video_comments', { video_id: VIDEO });
    expect(comments.value.error.type).toBe('insufficient_quota');
  });

  it('get_video_comments: 1 per nonempty page, 0 for an empty one', async () => {
    const { id, key } = await h.account('starter');
    const client = await connect(key);
    const top = await call(client, 'get_video_comments', { video_id: VIDEO, sort: 'newest' });
    expect(top.value).toMatchObject({ sort: 'newest', credits_charged: 1 });
    const replies = await call(client, 'get_video_comments', { video_id: VIDEO, reply_to: top.value.comments[0].id });
    expect(replies.value.credits_charged).toBe(1);
    const empty = await call(client, 'get_video_comments', { video_id: 'nocomm00001' });
    expect(empty.value).toMatchObject({ comments: [], credits_charged: 0 });
    expect(await balance(id)).toBe(998);
  });

  it('create_job: Free -> plan_not_allowed; paid plans reserve N and honour idempotency_key', async () => {
    const free = await h.account('free');
    const denied = await call(await connect(free.key), 'create_job', { video_ids: videoIds('vid', 3) });
    expect(denied.isError).toBe(true);
    expect(denied.value.error.type).toBe('plan_not_allowed');
    expect(await balance(free.id)).toBe(30);

    const { id, key } = await h.account('starter');
    const client = await connect(key);
    const args = { video_ids: videoIds('vid', 3), include_comments: true, idempotency_key: 'mcp-1' };
    const first = await call(client, 'create_job', args);
    expect(first.value).toMatchObject({ idempotent_replayed: false, job: { reserved: 6, videos: 3, status: 'queued' } });
    const again = await call(client, 'create_job', args);
    expect(again.value).toMatchObject({ idempotent_replayed: true, job: { id: first.value.job.id } });
    const reused = await call(client, 'create_job', { ...args, video_ids: videoIds('vid', 4) });
    expect(reused.value.error.type).toBe('idempotency_key_reused');
    expect(await balance(id)).toBe(994);
    // The REST endpoint sees the same job.
    expect((await h.request(`/jobs/${first.value.job.id}`, { key })).body.reserved).toBe(6);
  });

  it('create_job checks its arguments with the POST /jobs schema: the same 400 error object as REST', async () => {
    const { id, key } = await h.account('starter');
    const client = await connect(key);
    const bodies = [
      { video_ids: ['short'] },
      { video_ids: [] },
      {},
      { channel_id: 'UCnope' },
      { video_ids: videoIds('vid', 2), channel_id: `UC${'a'.repeat(22)}` },
    ];
    for (const body of bodies) {
      const viaMcp = await call(client, 'create_job', body);
      const viaRest = await h.request('/jobs', { key, body });
      expect(viaRest.status).toBe(400);
      expect(viaMcp.isError).toBe(true);
      expect(viaMcp.value.error).toEqual(viaRest.body.error);
      expect(viaMcp.value.error).toMatchObject({ type: 'invalid_request', param: expect.any(String) });
    }
    expect(await balance(id)).toBe(1000);
  });

  it('an OAuth token resolves to the same account: same api counter, same credits', async () => {
    const { id, key } = await h.account('starter');
    const minted = await h.admin(`/admin/accounts/${id}/oauth-tokens`);
    expect(minted.status).toBe(201);
    const client = await connect(minted.body.access_token);
    const r = await call(client, 'get_transcript', { video_id: VIDEO });
    expect(r.value.credits_charged).toBe(1);
    await h.request(`/transcript/${VIDEO}`, { key });
    expect(await apiRemaining(key)).toBe(98);
    expect(await balance(id)).toBe(998);
    // The same token also works on REST.
    expect((await h.request('/api/v1/search?q=a', { key: minted.body.access_token })).status).toBe(200);
  });

  it('401 and the per-minute 429 are HTTP responses; the 429 is not counted', async () => {
    await expect(connect('tgk_0000000000000000_' + '0'.repeat(64))).rejects.toMatchObject({ code: 401 });
    const raw = await h.request('/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('x-ratelimit-limit')).toBeNull();
    // RFC 9728 §5.1: the 401 says where the protected resource metadata is.
    expect(raw.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${h.url}/.well-known/oauth-protected-resource"`);

    const { id, key } = await h.account('free');
    const client = await connect(key);
    for (let i = 0; i < 30; i++) await h.request('/api/v1/search?q=a', { key });
    await expect(call(client, 'get_transcript', { video_id: VIDEO })).rejects.toMatchObject({ code: 429 });
    const limited = await h.request('/mcp', {
      key,
      body: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'get_video_comments', arguments: { video_id: VIDEO } } },
      headers: { accept: 'application/json, text/event-stream' },
    });
    expect(limited.status).toBe(429);
    expect(limited.body.error).toMatchObject({ type: 'rate_limited', message: 'Rate limit exceeded' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    // Housekeeping and get_usage still work while the budget is spent, and the denied calls spent nothing.
    expect((await client.listTools()).tools).toHaveLength(4);
    expect((await call(client, 'get_usage')).value.rate_limit.remaining).toBe(0);
    expect(await balance(id)).toBe(30);
    h.clock.advance(60_000);
    expect((await call(client, 'get_usage')).value.rate_limit.remaining).toBe(30);
  });
});
