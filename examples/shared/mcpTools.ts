/**
 * The MCP tools (SPEC §5, §9): get_transcript (1 credit; with include_comments 2 when a
 * nonempty Top page comes too, 1 when comments fail, are empty or only 1 credit is left; a
 * comments failure never loses the transcript), get_video_comments (1 per nonempty page),
 * create_job (the REST handler itself, so the same order and idempotency rules hold) and
 * get_usage. The HTTP layer in mcp.ts has already counted the call.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { insufficientReply, type Tollgate } from '../../src/index.ts';
import type { ApiKeys } from './apiKeys.ts';
import type { Caller } from './auth.ts';
import { usageBody } from './bodies.ts';
import { chargeAfterWork } from './charge.ts';
import { replyForThrown } from './errors.ts';
import { createJob, type CreateJobDeps } from './handlers/createJob.ts';
import type { ApiRequest, HttpReply } from './http.ts';
import type { TokenVerifier } from './oauth.ts';
import { convertTranscript, isPlatformError, parseCommentSort, parseTranscriptFormat, TRANSCRIPT_FORMATS, type CommentsPage } from './platform/index.ts';
import type { Sessions } from './sessions.ts';

export interface ToolDeps extends CreateJobDeps {
  apiKeys: ApiKeys;
  sessions: Sessions;
  verifyToken?: TokenVerifier;
  tollgate: Tollgate;
  precheck?: { sufficient: boolean; balance: number; needed: number };
}

type CallDeps = ToolDeps & { caller: Caller; requestId: string };
type ToolResult = { content: Array<{ type: 'text'; text: string }>; isError?: boolean };

const ok = (value: unknown): ToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value) }] });
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
  const insufficient = () => fromReply(insufficientReply(deps.precheck!.balance, deps.precheck!.needed, deps.requestId));

  server.registerTool(
    'get_transcript',
    {
      description: 'Transcript of one video (1 credit). include_comments adds its Top comments page (1 more credit when nonempty).',
      inputSchema: { video_id: z.string(), format: z.enum(TRANSCRIPT_FORMATS as [string, ...string[]]).optional(), include_comments: z.boolean().optional() },
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
          try {
            page = await deps.platform.getComments(args.video_id, { sort: 'top' });
            commentsStatus = page.comments.length > 0 ? 'delivered' : 'empty';
          } catch (error) {
            if (!isPlatformError(error)) throw error;
            commentsStatus = 'failed';
          }
        }
        const optional = commentsStatus === 'delivered' ? 1 : 0;
        const charge = await chargeAfterWork(deps.tollgate, account, { required: 1, optional, operationId: deps.requestId });
        if (!charge.ok) return fromReply(insufficientReply(charge.remaining, charge.needed, deps.requestId));
        if (optional === 1 && charge.charged < 2) commentsStatus = 'insufficient_credits';
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
      inputSchema: { video_id: z.string(), sort: z.enum(['top', 'newest']).optional(), page_token: z.string().optional(), reply_to: z.string().optional() },
    },
    (args) =>
      guarded('get_video_comments', async () => {
        const sort = parseCommentSort(args.sort ?? 'top');
        if (!deps.precheck?.sufficient) return insufficient();
        const page = await deps.platform.getComments(args.video_id, { sort, pageToken: args.page_token, replyTo: args.reply_to });
        if (page.comments.length === 0) return ok({ ...page, credits_charged: 0 });
        const charge = await chargeAfterWork(deps.tollgate, account, { required: 1, operationId: deps.requestId });
        if (!charge.ok) return fromReply(insufficientReply(charge.remaining, charge.needed, deps.requestId));
        return ok({ ...page, credits_charged: 1 });
      }),
  );

  server.registerTool(
    'create_job',
    {
      description: 'Bulk job over video_ids, a channel_id or a playlist_id: reserves N credits (2N with include_comments). Not on the Free plan.',
      inputSchema: {
        video_ids: z.array(z.string()).optional(),
        channel_id: z.string().optional(),
        playlist_id: z.string().optional(),
        include_comments: z.boolean().optional(),
        idempotency_key: z.string().optional(),
      },
    },
    (args) =>
      guarded('create_job', async () => {
        const { idempotency_key: key, ...body } = args;
        const request: ApiRequest = { ...fakeRequest('create_job'), body, headers: key === undefined ? {} : { 'idempotency-key': key } };
        const reply = await createJob(deps)(request, { caller: deps.caller, headers: {} });
        if (reply.status >= 400) return fromReply(reply);
        return ok({ job: reply.body, idempotent_replayed: reply.headers['Idempotent-Replayed'] === 'true' });
      }),
  );

  server.registerTool('get_usage', { description: 'The account\'s credits, cycle, rate limit and jobs.' }, () =>
    guarded('get_usage', async () => ok(usageBody(await deps.tollgate.usage(account, 'api')))),
  );
}
