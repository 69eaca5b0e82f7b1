/**
 * The MCP tools' output schemas (`outputSchema`, checked by the SDK against each successful
 * result's `structuredContent`): the response bodies the REST routes answer, in zod. A change
 * to api/bodies.ts that these do not follow fails the tool call, so the two cannot drift apart.
 */
import { z } from 'zod';
import { TRANSCRIPT_FORMATS } from '../platform/index.ts';

const count = z.number().int().min(0);
const instant = z.string().describe('ISO 8601, UTC');

export const TranscriptSchema = z.object({
  video_id: z.string(),
  language: z.string(),
  segments: z.array(z.object({ start: z.number(), duration: z.number(), text: z.string() })),
});

export const CommentsPageSchema = z.object({
  video_id: z.string(),
  sort: z.enum(['top', 'newest']),
  comments: z.array(z.object({ id: z.string(), author: z.string(), text: z.string(), like_count: count, reply_count: count, published_at: instant })),
  next_page_token: z.string().nullable(),
  reply_to: z.string().optional(),
});

export const JobSchema = z.object({
  id: z.string(),
  status: z.enum(['queued', 'running', 'completed', 'canceled']),
  videos: count,
  include_comments: z.boolean(),
  reserved: count,
  delivered: count,
  failed: z.object({ video_unavailable: count, no_captions: count }),
  comment_pages: count,
  spent: count,
  refunded: count,
  refunded_to_ended_cycle: count,
  cycle_id: count,
  created_at: instant,
  finished_at: instant.nullable(),
});

/** get_transcript: the transcript (an object in JSON, text in the other formats) and, with include_comments, its Top page. */
export const TranscriptResultShape = {
  video_id: z.string(),
  format: z.enum(TRANSCRIPT_FORMATS as [string, ...string[]]),
  transcript: z.union([TranscriptSchema, z.string()]).describe('The transcript object when format is json, else the converted text'),
  comments: CommentsPageSchema.nullable(),
  comments_status: z.enum(['not_requested', 'delivered', 'empty', 'failed', 'insufficient_credits']),
  credits_charged: count,
};

/** get_video_comments: one page and what it cost (1 when nonempty, else 0). */
export const CommentsResultShape = { ...CommentsPageSchema.shape, credits_charged: count };

/** create_job: the POST /jobs body, and whether it was an Idempotency-Key replay. */
export const CreateJobResultShape = { job: JobSchema, idempotent_replayed: z.boolean() };

/** A source of credits: a grant, or the cycle's allowance (`cycle:<n>`, kind plan). */
export const GrantSchema = z.object({
  grant_id: z.string(),
  kind: z.enum(['paid', 'promotional', 'adjustment', 'plan']),
  status: z.enum(['pending', 'active', 'used', 'expired', 'voided']),
  priority: count,
  amount: count,
  remaining: count,
  spent: count,
  held: count,
  expired: count,
  voided: count,
  refunded_after_end: count,
  effective_at: instant,
  expires_at: instant.nullable().describe('null: never expires'),
  created_at: instant,
  ended_at: instant.nullable(),
  reason: z.string().nullable(),
});

/** get_usage: the GET /api/v1/usage body. */
export const UsageResultShape = {
  plan: z.string(),
  credits: z.object({
    allowance: count,
    balance: count,
    spent: count,
    held: count,
    available: count.describe("What the next charge may take: the cycle's balance and every active grant's remaining"),
    next_expiry: z.object({ grant_id: z.string(), expires_at: instant, amount: count }).nullable(),
  }),
  cycle: z.object({ id: count, start: instant, end: instant }),
  rate_limit: z.object({ limit: count, remaining: count, reset_seconds: count }),
  jobs: z.object({ active: count, cap: count }),
  grants: z.array(GrantSchema).describe('The sources of credits in the order they are spent; pending ones last'),
};
