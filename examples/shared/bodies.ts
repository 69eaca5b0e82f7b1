/**
 * Response bodies of SPEC §9 in the API's snake_case. Instants are ISO 8601 strings in UTC
 * (`finished_at` is null while a job runs); counts are plain numbers.
 */
import type { Job, Usage } from '../../src/index.ts';

const iso = (ms: number) => new Date(ms).toISOString();

export function jobBody(job: Job) {
  return {
    id: job.id,
    status: job.status,
    videos: job.videos,
    include_comments: job.includeComments,
    reserved: job.reserved,
    delivered: job.delivered,
    failed: { video_unavailable: job.failed.videoUnavailable, no_captions: job.failed.noCaptions },
    comment_pages: job.commentPages,
    spent: job.spent,
    refunded: job.refunded,
    refunded_to_ended_cycle: job.refundedToEndedCycle,
    cycle_id: job.cycleId,
    created_at: iso(job.createdAt),
    finished_at: job.finishedAt === null ? null : iso(job.finishedAt),
  };
}

/** A website comments collection: a job whose reservation is the user's credit limit. */
export function collectionBody(job: Job, videoId: string | null) {
  return {
    id: job.id,
    status: job.status,
    video_id: videoId,
    limit: job.limit,
    reserved: job.reserved,
    comment_pages: job.commentPages,
    spent: job.spent,
    refunded: job.refunded,
    refunded_to_ended_cycle: job.refundedToEndedCycle,
    end_reason: job.endReason,
    cycle_id: job.cycleId,
    created_at: iso(job.createdAt),
    finished_at: job.finishedAt === null ? null : iso(job.finishedAt),
  };
}

export function usageBody(usage: Usage) {
  return {
    plan: usage.plan,
    credits: {
      allowance: usage.credits.allowance,
      balance: usage.credits.balance,
      spent: usage.credits.spent,
      held: usage.credits.held,
    },
    cycle: { id: usage.cycle.id, start: iso(usage.cycle.start), end: iso(usage.cycle.end) },
    rate_limit: {
      limit: usage.rateLimit.limit,
      remaining: usage.rateLimit.remaining,
      reset_seconds: Math.max(0, Math.ceil(usage.rateLimit.resetMs / 1000)),
    },
    jobs: { active: usage.jobs.active, cap: usage.jobs.cap },
  };
}
