/**
 * MCP over Streamable HTTP at POST /mcp (docs/example-service.md#endpoints), with the official SDK in stateless JSON
 * mode: every HTTP request gets its own McpServer and transport, bound to the caller.
 * Before the SDK sees a request, in one round trip with the key check: a tools/call is admitted
 * on the shared `api` counter at its tool's price (tools.ts; the credit pre-check of a
 * charged tool included) and its per-minute 429 is an HTTP response; protocol housekeeping
 * (initialize, tools/list, notifications) and get_usage count nothing and only read the
 * state (get_usage's answer comes from that same read).
 * A missing or bad API key / OAuth token is 401 with `WWW-Authenticate: Bearer
 * resource_metadata="…"`, which leads a client to the authorization server (auth/oauthServer.ts);
 * bad ones count against the client's IP.
 * Credit and plan errors are tool results with isError and the error object.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { checkCredential, credentialOf, type Price } from '../auth/credentials.ts';
import { replyForThrown } from '../http/errors.ts';
import type { GuardDeps } from '../auth/guard.ts';
import { bodyRefusal, fail, type ApiRequest, type Handler, type HttpReply } from '../http/handler.ts';
import { MESSAGES } from '../http/messages.ts';
import { registerTools, toolPrice, type ToolDeps } from './tools.ts';
import { resourceMetadataUrl } from '../auth/oauthServer.ts';

const HOP_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'host', 'keep-alive']);
/** Housekeeping reads the rate-limit state for the headers and counts nothing. */
const HOUSEKEEPING: Price = { requests: 0, credits: 0 };

export function mcpHandler(deps: ToolDeps & GuardDeps): Handler {
  // RFC 9728 §5.1: the 401 says where the protected resource metadata is, which names the
  // authorization server (auth/oauthServer.ts); a token that was sent and failed is invalid_token.
  const unauthorized = (request: ApiRequest, presented = false) => {
    const metadata = `resource_metadata="${resourceMetadataUrl(deps.site, request)}"`;
    const challenge = presented ? `Bearer error="invalid_token", ${metadata}` : `Bearer ${metadata}`;
    return fail(request, 'unauthorized', MESSAGES.mcpUnauthorized, { headers: { 'WWW-Authenticate': challenge } });
  };
  return async (request) => {
    let headers: Record<string, string> = {};
    try {
      const blocked = deps.failedAuth.blocked(request);
      if (blocked) return blocked;
      const credential = credentialOf(request, 'keys', deps.tollgate);
      if (credential === null) return unauthorized(request);
      const readable = request.bodyError === undefined && !Array.isArray(request.body);
      const message = (readable ? (request.body ?? {}) : {}) as { method?: unknown; params?: { name?: unknown } };
      const price = readable && message.method === 'tools/call' ? toolPrice(message.params?.name) : HOUSEKEEPING;
      const checked = await checkCredential(deps, credential, price, request);
      if (!checked.valid) return deps.failedAuth.refuse(request, unauthorized(request, true));
      const refused = bodyRefusal(request);
      if (refused) return refused;
      if (!readable) return fail(request, 'invalid_request', MESSAGES.oneMessage);
      if (checked.reply) return checked.reply;
      headers = checked.headers;
      const { caller, credits: precheck, usage } = checked;
      const reply = await runSdk(request.body, request.headers, { ...deps, precheck, usage, caller, requestId: request.requestId });
      return { ...reply, headers: { ...reply.headers, ...headers } };
    } catch (error) {
      return replyForThrown(request, error, headers);
    }
  };
}

/**
 * The SDK builds an Ajv instance (with its formats) for every server unless it is given one;
 * our servers live one request each, so they share this one. (It checks elicitation answers,
 * which this server never asks for.)
 */
const jsonSchemaValidator = new AjvJsonSchemaValidator();

async function runSdk(body: unknown, headers: Record<string, string | undefined>, deps: Parameters<typeof registerTools>[1]): Promise<HttpReply> {
  const server = new McpServer({ name: 'tollgate-example', version: '0.1.0' }, { jsonSchemaValidator });
  registerTools(server, deps);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const forwarded = new Headers();
    for (const [name, value] of Object.entries(headers)) {
      // The body is handed over parsed; its framing headers no longer describe anything.
      if (value !== undefined && !HOP_HEADERS.has(name)) forwarded.set(name, value);
    }
    const response = await transport.handleRequest(new Request('http://mcp.local/mcp', { method: 'POST', headers: forwarded }), {
      parsedBody: body,
    });
    const text = await response.text();
    const replyHeaders: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      replyHeaders[name] = value;
    });
    return { status: response.status, headers: replyHeaders, body: text };
  } finally {
    await server.close();
  }
}
