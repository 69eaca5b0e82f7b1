// MCP authorization as a client that follows the spec finds it, against both example servers:
// the 401's resource metadata (RFC 9728) names the example's authorization server (RFC 8414),
// whose token endpoint grants client credentials (an account id and one of its API keys) for a
// token the verifier hook checks. Driven end to end by the official SDK client's own
// ClientCredentialsProvider: no token is handed to it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADAPTERS, type Harness, startHarness } from './harness.ts';

const VIDEO = 'dQw4w9WgXcQ';

describe.each(ADAPTERS)('$name server: MCP authorization discovery and the client-credentials grant', (adapter) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(adapter, 'oauth');
  });
  afterAll(async () => {
    await h?.close();
  });

  const token = (form: Record<string, string>, headers: Record<string, string> = {}) =>
    h.request('/oauth/token', { raw: new URLSearchParams(form).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

  it('the protected resource metadata names this server as its authorization server, whose metadata names the token endpoint', async () => {
    const resource = await h.request('/.well-known/oauth-protected-resource');
    expect(resource.status).toBe(200);
    expect(resource.body).toMatchObject({ resource: h.url, authorization_servers: [h.url], bearer_methods_supported: ['header'] });
    const mcp = await h.request('/.well-known/oauth-protected-resource/mcp');
    expect(mcp.body).toMatchObject({ resource: `${h.url}/mcp`, authorization_servers: [h.url] });
    const server = await h.request('/.well-known/oauth-authorization-server');
    expect(server.status).toBe(200);
    expect(server.body).toMatchObject({
      issuer: h.url,
      token_endpoint: `${h.url}/oauth/token`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      response_types_supported: [],
    });
    // No person signs in here: the authorization endpoint the SDK's schema asks for refuses every response type.
    const authorize = await h.request('/oauth/authorize?response_type=code');
    expect(authorize.status).toBe(400);
    expect(authorize.body.error).toBe('unsupported_response_type');
  });

  it('an MCP 401 points at the metadata; a token that was sent and failed is invalid_token', async () => {
    const init = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const accept = { accept: 'application/json, text/event-stream' };
    const none = await h.request('/mcp', { body: init, headers: accept });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${h.url}/.well-known/oauth-protected-resource"`);
    const bad = await h.request('/mcp', { body: init, headers: { ...accept, authorization: 'Bearer oat_nope.nope' } });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", resource_metadata="${h.url}/.well-known/oauth-protected-resource"`);
  });

  it('the SDK client discovers the authorization server from the 401, gets a token with client credentials, and calls tools on the same account', async () => {
    const { id, key } = await h.account('starter');
    const provider = new ClientCredentialsProvider({ clientId: id, clientSecret: key, expectedIssuer: h.url });
    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { authProvider: provider }));
    try {
      const result = await client.callTool({ name: 'get_transcript', arguments: { video_id: VIDEO } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ video_id: VIDEO, credits_charged: 1 });
      expect(provider.tokens()?.access_token).toMatch(/^oat_/);
      // The token's account: its credits and its one `api` counter, shared with the API key.
      const usage = await h.request('/api/v1/usage', { key });
      expect(usage.body).toMatchObject({ credits: { balance: 999 }, rate_limit: { remaining: 99 } });
    } finally {
      await client.close();
    }
  });

  it('the token endpoint takes client_secret_basic or client_secret_post; a token works on REST too', async () => {
    const { id, key } = await h.account('starter');
    const viaBasic = await token({ grant_type: 'client_credentials' }, { authorization: basic(id, key) });
    expect(viaBasic.status).toBe(200);
    expect(viaBasic.headers.get('cache-control')).toBe('no-store');
    expect(viaBasic.body).toMatchObject({ access_token: expect.stringMatching(/^oat_/), token_type: 'Bearer', expires_in: 3600 });
    const viaPost = await token({ grant_type: 'client_credentials', client_id: id, client_secret: key, resource: h.url });
    expect(viaPost.status).toBe(200);
    const search = await h.request('/api/v1/search?q=cats', { key: viaPost.body.access_token });
    expect(search.status).toBe(200);
    expect(search.headers.get('x-ratelimit-remaining')).toBe('99');
  });

  it('refuses what it cannot grant, in the RFC 6749 error body; a wrong secret is a failed key check of the IP', async () => {
    const { id, key } = await h.account('starter');
    const other = await h.account('starter');
    const cases: Array<[string, Awaited<ReturnType<typeof token>>, number, string]> = [
      ['a wrong secret', await token({ grant_type: 'client_credentials' }, { authorization: basic(id, `${key}x`) }), 401, 'invalid_client'],
      ["another account's key", await token({ grant_type: 'client_credentials', client_id: id, client_secret: other.key }), 401, 'invalid_client'],
      ['no client authentication', await token({ grant_type: 'client_credentials' }), 401, 'invalid_client'],
      ['another grant', await token({ grant_type: 'password', client_id: id, client_secret: key }), 400, 'unsupported_grant_type'],
      ['no grant', await token({ client_id: id, client_secret: key }), 400, 'invalid_request'],
      [
        'another resource',
        await token({ grant_type: 'client_credentials', client_id: id, client_secret: key, resource: 'https://elsewhere.example' }),
        400,
        'invalid_target',
      ],
      [
        'a JSON body',
        await h.request('/oauth/token', { body: { grant_type: 'client_credentials', client_id: id, client_secret: key } }),
        400,
        'invalid_request',
      ],
    ];
    for (const [what, reply, status, error] of cases) {
      expect(reply.status, what).toBe(status);
      expect(reply.body.error, what).toBe(error);
      expect(reply.headers.get('cache-control'), what).toBe('no-store');
    }
    expect(cases[0]![1].headers.get('www-authenticate')).toBe('Basic realm="oauth"');

    // Wrong secrets count against the client's IP like any failed key check: past 10 in the
    // minute the IP gets 429, even with the right secret, until the minute ends.
    let reply = cases[0]![1];
    for (let i = 0; i < 11 && reply.status !== 429; i++) reply = await token({ grant_type: 'client_credentials' }, { authorization: basic(id, `${key}x`) });
    expect(reply.status).toBe(429);
    expect(reply.body.error.type).toBe('rate_limited');
    expect((await token({ grant_type: 'client_credentials' }, { authorization: basic(id, key) })).status).toBe(429);
    h.clock.advance(60_000);
    expect((await token({ grant_type: 'client_credentials' }, { authorization: basic(id, key) })).status).toBe(200);
  });
});
