/**
 * MCP over Streamable HTTP at POST /mcp (SPEC §9), with the official SDK in stateless JSON
 * mode: every HTTP request gets its own McpServer and transport, bound to the caller.
 * Before the SDK sees a request: 401 for a missing or bad API key / OAuth token; a tools/call
 * is admitted on the shared `api` counter (with the credit pre-check of a charged tool in the
 * same round trip) and its per-minute 429 is an HTTP response. Protocol housekeeping
 * (initialize, tools/list, notifications) counts nothing. Credit and plan errors are tool
 * results with isError and the SPEC §8 error object (see mcpTools.ts).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { rateLimitedReply, rateLimitHeaders } from '../../src/index.ts';
import { authenticate } from './auth.ts';
import { replyForThrown } from './errors.ts';
import { fail, type Handler, type HttpReply } from './http.ts';
import { registerTools, type ToolDeps } from './mcpTools.ts';

const CHARGED_TOOLS = new Set(['get_transcript', 'get_video_comments']);
const HOP_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'host', 'keep-alive']);

export function mcpHandler(deps: ToolDeps & { ietfHeaders: boolean }): Handler {
  return async (request) => {
    let headers: Record<string, string> = {};
    try {
      const caller = await authenticate(request, deps, 'keys');
      if (caller === null) {
        return fail(request, 'unauthorized', 'MCP needs an API key or OAuth token: Authorization: Bearer <token>', {
          headers: { 'WWW-Authenticate': 'Bearer' },
        });
      }
      if (request.bodyError !== undefined) return fail(request, 'invalid_request', request.bodyError);
      if (Array.isArray(request.body)) return fail(request, 'invalid_request', 'Send one JSON-RPC message per request');
      const message = (request.body ?? {}) as { method?: unknown; params?: { name?: unknown } };
      const headerOptions = { ietf: deps.ietfHeaders, policy: 'api' };
      let precheck: ToolDeps['precheck'];
      if (message.method === 'tools/call') {
        const credits = CHARGED_TOOLS.has(String(message.params?.name)) ? 1 : 0;
        const admission = await deps.tollgate.limits.admit(caller.accountId, { surface: 'api', credits });
        if (!admission.allowed) return rateLimitedReply(admission.rateLimit, admission.retryAfterMs, request.requestId, headerOptions);
        headers = rateLimitHeaders(admission.rateLimit, headerOptions);
        precheck = admission.credits;
      } else {
        headers = rateLimitHeaders((await deps.tollgate.usage(caller.accountId, 'api')).rateLimit, headerOptions);
      }
      const reply = await runSdk(request.body, request.headers, { ...deps, precheck, caller, requestId: request.requestId });
      return { ...reply, headers: { ...reply.headers, ...headers } };
    } catch (error) {
      return replyForThrown(request, error, headers);
    }
  };
}

async function runSdk(body: unknown, headers: Record<string, string | undefined>, deps: Parameters<typeof registerTools>[1]): Promise<HttpReply> {
  const server = new McpServer({ name: 'tollgate-example', version: '0.1.0' });
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
