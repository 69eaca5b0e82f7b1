/**
 * Response bodies in the API's snake_case, computed from tollgate's records.
 * Instants are ISO 8601 strings in UTC (`finished_at` is null while a job runs); counts are
 * plain numbers.
 *
 * A bulk job is an items hold: one item per video, each reserving 1 credit for its transcript
 * (`required`) and, with comments, 1 for its Top page (`optional`). A delivered video spends
 * its required credit and, when its Top page was nonempty, its optional one (optionalSpent); a
 * failed one is settled with its failure as label. A comments collection is a budget hold of
 * L credits, one spent per nonempty page.
 */
import type { Hold, Usage } from 'tollgate';

const iso = (ms: number) => new Date(ms).toISOString();

export type JobStatus = 'queued' | 'running' | 'completed' | 'canceled';

/** queued: open with nothing settled yet; running: open with something settled. */
export function jobStatus(hold: Hold): JobStatus {
  if (hold.status === 'open') return hold.settled === 0 ? 'queued' : 'running';
  return hold.status;
}

/** Why a collection ended, in the words of the API: limit_reached when L ran out. */
function endReason(hold: Hold): string | null {
  switch (hold.endReason) {
    case null:
      return null;
    case 'exhausted':
      return 'limit_reached';
    case 'settled':
      return 'completed';
    default:
      return hold.endReason;
  }
}

export function jobBody(hold: Hold) {
  return {
    id: hold.id,
    status: jobStatus(hold),
    videos: hold.items,
    include_comments: hold.perItem.optional > 0,
    reserved: hold.reserved,
    delivered: hold.delivered,
    failed: { video_unavailable: hold.failed.video_unavailable ?? 0, no_captions: hold.failed.no_captions ?? 0 },
    comment_pages: hold.optionalSpent,
    spent: hold.spent,
    refunded: hold.refunded,
    refunded_to_ended_cycle: hold.refundedToEndedCycle,
    cycle_id: hold.cycleId,
    created_at: iso(hold.createdAt),
    finished_at: hold.endedAt === null ? null : iso(hold.endedAt),
  };
}

/** A website comments collection: a budget hold whose amount is the user's credit limit. */
export function collectionBody(hold: Hold, videoId: string | null) {
  return {
    id: hold.id,
    status: jobStatus(hold),
    video_id: videoId,
    limit: hold.reserved,
    reserved: hold.reserved,
    comment_pages: hold.spent,
    spent: hold.spent,
    refunded: hold.refunded,
    refunded_to_ended_cycle: hold.refundedToEndedCycle,
    end_reason: endReason(hold),
    cycle_id: hold.cycleId,
    created_at: iso(hold.createdAt),
    finished_at: hold.endedAt === null ? null : iso(hold.endedAt),
  };
}

/** Either body, by the hold's kind. */
export function holdBody(hold: Hold, videoId: string | null) {
  return hold.kind === 'items' ? jobBody(hold) : collectionBody(hold, videoId);
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
    jobs: { active: usage.holds.active, cap: usage.holds.cap },
  };
}
