/**
 * The MCP tools (docs/example-service.md): get_transcript (1 credit; with include_comments 2 when a
 * nonempty Top page comes too, 1 when comments fail, are empty or only 1 credit is left; a
 * comments failure never loses the transcript), get_video_comments (1 per nonempty page),
 * create_job (the REST handler itself, so the same order, schema and idempotency rules hold)
 * and get_usage (free, like GET /api/v1/usage). Each tool's price is written once in
 * TOOL_PRICES; the HTTP layer in server.ts has already counted the call and pre-checked the
 * credits at that price.
 *
 * Each tool declares its output schema (schemas.ts: the REST bodies) and hints for clients
 * (annotations); a success carries the value as `structuredContent` and, for clients that read
 * only text, as JSON text beside it. An error stays `isError` with the error object as text.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { Tollgate, Usage } from 'tollgate';
import { insufficientReply } from 'tollgate/http';
import type { Caller, Price } from '../auth/credentials.ts';
import { usageBody } from '../api/bodies.ts';
import { chargeAfterWork } from '../api/charge.ts';
import { replyForThrown } from '../http/errors.ts';
import { createJob, type CreateJobDeps } from '../jobs/createJob.ts';
import type { ApiRequest, HttpReply } from '../http/handler.ts';
import { JOB_BODY_FIELDS } from '../jobs/jobRequest.ts';
import { CommentsResultShape, CreateJobResultShape, TranscriptResultShape, UsageResultShape } from './schemas.ts';
import { commentsPageOrNull, convertTranscript, parseCommentSort, parseTranscriptFormat, TRANSCRIPT_FORMATS, type CommentsPage } from '../platform/index.ts';

export interface ToolDeps extends CreateJobDeps {
  tollgate: Tollgate;
  precheck?: { sufficient: boolean; balance: number; needed: number; available: number };
  /** The usage read with the credential when the call counts no request (get_usage). */
  usage?: Usage;
}

/**
 * Each tools/call counts one `api` request and pre-checks the tool's credits, except
 * get_usage, which is free and not counted like its REST twin GET /api/v1/usage (docs/example-service.md).
 * get_transcript's optional credit is the comments page of include_comments, charged only as
 * far as the balance allows.
 */
export const TOOL_PRICES = {
  get_transcript: { requests: 1, credits: 1, optional: 1 },
  get_video_comments: { requests: 1, credits: 1 },
  create_job: { requests: 1, credits: 0 },
  get_usage: { requests: 0, credits: 0 },
} as const satisfies Record<string, Price>;

/** Hints for clients: what spends credits is not read-only, and only a usage read may be repeated freely. */
const SPENDS_CREDITS = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true } as const;

/** A tools/call's price; a tool that does not exist still counts its request (the SDK answers it). */
export function toolPrice(name: unknown): Price {
  return Object.hasOwn(TOOL_PRICES, String(name)) ? TOOL_PRICES[name as keyof typeof TOOL_PRICES] : { requests: 1, credits: 0 };
}

/**
 * The tools' input and output schemas, built once: the server and its tools are made anew for
 * every request (server.ts), and the SDK turns a raw shape into an object schema at each
 * registration, a large share of what each MCP call allocated.
 */
const INPUTS = {
  get_transcript: z.object({
    video_id: z.string(),
    format: z.enum(TRANSCRIPT_FORMATS as [string, ...string[]]).optional(),
    include_comments: z.boolean().optional(),
  }),
  get_video_comments: z.object({
    video_id: z.string(),
    sort: z.enum(['top', 'newest']).optional(),
    page_token: z.string().optional(),
    reply_to: z.string().optional(),
  }),
  create_job: z.object({ ...JOB_BODY_FIELDS, idempotency_key: z.string().optional() }),
};
const OUTPUTS = {
  get_transcript: z.object(TranscriptResultShape),
  get_video_comments: z.object(CommentsResultShape),
  create_job: z.object(CreateJobResultShape),
  get_usage: z.object(UsageResultShape),
};

type CallDeps = ToolDeps & { caller: Caller; requestId: string };
type ToolResult = { content: Array<{ type: 'text'; text: string }>; structuredContent?: Record<string, unknown>; isError?: boolean };

const ok = (value: Record<string, unknown>): ToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value });
const fromReply = (reply: HttpReply): ToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(reply.body) }],
  ...(reply.status >= 400 ? { isError: true } : {}),
});

export function registerTools(server: McpServer, deps: CallDeps): void {
  const account = deps.caller.accountId;
  const fakeRequest = (path: string): ApiRequest => ({ method: 'POST', path, params: {}, query: {}, headers: {}, body: undefined, requestId: deps.requestId });
  const guarded = async (path: string, work: () => Promise<ToolResult>): Promise<ToolResult> => {
    try {
      return await work();
    } catch (error) {
      return fromReply(replyForThrown(fakeRequest(path), error));
    }
  };
  const insufficient = () => fromReply(insufficientReply(deps.precheck!.available, deps.precheck!.needed, deps.requestId));

  server.registerTool(
    'get_transcript',
    {
      description: 'Transcript of one video (1 credit). include_comments adds its Top comments page (1 more credit when nonempty).',
      inputSchema: INPUTS.get_transcript,
      outputSchema: OUTPUTS.get_transcript,
      annotations: { title: 'Get a transcript', ...SPENDS_CREDITS },
    },
    (args) =>
      guarded('get_transcript', async () => {
        const format = parseTranscriptFormat(args.format ?? 'json');
        if (!deps.precheck?.sufficient) return insufficient();
        const transcript = await deps.platform.getTranscript(args.video_id);
        const converted = convertTranscript(transcript, format);
        let page: CommentsPage | null = null;
        let commentsStatus = 'not_requested';
        if (args.include_comments) {
          page = await commentsPageOrNull(deps.platform, args.video_id, { sort: 'top' });
          commentsStatus = page === null ? 'failed' : page.comments.length > 0 ? 'delivered' : 'empty';
        }
        const price = TOOL_PRICES.get_transcript;
        const optional = commentsStatus === 'delivered' ? price.optional : 0;
        const charge = await chargeAfterWork(deps.tollgate, account, { required: price.credits, optional, operationId: deps.requestId });
        if (!charge.ok) return fromReply(insufficientReply(charge.available, charge.needed, deps.requestId));
        if (optional > 0 && charge.charged < price.credits + optional) commentsStatus = 'insufficient_credits';
        return ok({
          video_id: args.video_id,
          format,
          transcript: format === 'json' ? transcript : converted.body,
          comments: commentsStatus === 'delivered' ? page : null,
          comments_status: commentsStatus,
          credits_charged: charge.charged,
        });
      }),
  );

  server.registerTool(
    'get_video_comments',
    {
      description: 'One comments page of a video: Top or Newest, a continuation (page_token) or a reply thread (reply_to). 1 credit when nonempty.',
      inputSchema: INPUTS.get_video_comments,
      outputSchema: OUTPUTS.get_video_comments,
      annotations: { title: 'Get a page of comments', ...SPENDS_CREDITS },
    },
    (args) =>
      guarded('get_video_comments', async () => {
        const sort = parseCommentSort(args.sort ?? 'top');
        if (!deps.precheck?.sufficient) return insufficient();
        const page = await deps.platform.getComments(args.video_id, { sort, pageToken: args.page_token, replyTo: args.reply_to });
        if (page.comments.length === 0) return ok({ ...page, credits_charged: 0 });
        const charge = await chargeAfterWork(deps.tollgate, account, { required: TOOL_PRICES.get_video_comments.credits, operationId: deps.requestId });
        if (!charge.ok) return fromReply(insufficientReply(charge.available, charge.needed, deps.requestId));
        return ok({ ...page, credits_charged: charge.charged });
      }),
  );

  server.registerTool(
    'create_job',
    {
      description: 'Bulk job over video_ids, a channel_id or a playlist_id: reserves N credits (2N with include_comments). Not on the Free plan.',
      inputSchema: INPUTS.create_job,
      outputSchema: OUTPUTS.create_job,
      // Not idempotent as such: only a repeat with the same idempotency_key creates nothing new.
      annotations: { title: 'Start a bulk job', ...SPENDS_CREDITS },
    },
    (args) =>
      guarded('create_job', async () => {
        const { idempotency_key: key, ...body } = args;
        const request: ApiRequest = { ...fakeRequest('create_job'), body, headers: key === undefined ? {} : { 'idempotency-key': key } };
        const reply = await createJob(deps)(request, { caller: deps.caller, price: TOOL_PRICES.create_job, headers: {} });
        if (reply.status >= 400) return fromReply(reply);
        return ok({ job: reply.body as Record<string, unknown>, idempotent_replayed: reply.headers['Idempotent-Replayed'] === 'true' });
      }),
  );

  server.registerTool(
    'get_usage',
    {
      description:
        "The account's credits (with what is available from every grant), cycle, rate limit, jobs, and its grants in the order they are spent. Free: spends no credit and counts no request.",
      outputSchema: OUTPUTS.get_usage,
      annotations: { title: 'Read usage', readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    () =>
      guarded('get_usage', async () => {
        const [usage, grants] = await Promise.all([deps.usage ?? deps.tollgate.usage(account, { surface: 'api' }), deps.tollgate.credits.grants(account)]);
        return ok(usageBody(usage, grants));
      }),
  );
}
