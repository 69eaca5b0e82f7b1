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
import type { Grant, Hold, Usage } from 'tollgate';
import { compareSources } from 'tollgate/model';

const iso = (ms: number) => new Date(ms).toISOString();
const isoOrNull = (ms: number | null) => (ms === null ? null : iso(ms));

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

/**
 * The usage body: the cycle's credits as before, plus `available` (what the next charge may
 * take: the cycle's balance and every active grant's remaining), the soonest grant to expire,
 * and the account's sources of credits in the order they are spent.
 */
export function usageBody(usage: Usage, grants: readonly Grant[]) {
  const next = usage.credits.nextExpiry;
  return {
    plan: usage.plan,
    credits: {
      allowance: usage.credits.allowance,
      balance: usage.credits.balance,
      spent: usage.credits.spent,
      held: usage.credits.held,
      available: usage.credits.available,
      next_expiry: next === null ? null : { grant_id: next.grantId, expires_at: iso(next.expiresAt), amount: next.amount },
    },
    cycle: { id: usage.cycle.id, start: iso(usage.cycle.start), end: iso(usage.cycle.end) },
    rate_limit: {
      limit: usage.rateLimit.limit,
      remaining: usage.rateLimit.remaining,
      reset_seconds: Math.max(0, Math.ceil(usage.rateLimit.resetMs / 1000)),
    },
    jobs: { active: usage.holds.active, cap: usage.holds.cap },
    grants: spendOrder(grants).map(grantBody),
  };
}

/** A source of credits (a grant, or `cycle:<n>` for the cycle's allowance) in the API's words. */
export function grantBody(grant: Grant) {
  return {
    grant_id: grant.grantId,
    kind: grant.kind,
    status: grant.status,
    priority: grant.priority,
    amount: grant.amount,
    remaining: grant.remaining,
    spent: grant.spent,
    held: grant.held,
    expired: grant.expired,
    voided: grant.voided,
    refunded_after_end: grant.refundedAfterEnd,
    effective_at: iso(grant.effectiveAt),
    expires_at: isoOrNull(grant.expiresAt),
    created_at: iso(grant.createdAt),
    ended_at: isoOrNull(grant.endedAt),
    reason: grant.reason,
  };
}

/** Creation ties: the cycle first, then grants by their number (`g<n>`). */
const seq = (grant: Grant) => (grant.grantId.startsWith('g') ? Number(grant.grantId.slice(1)) : 0);
const LIVE: ReadonlySet<Grant['status']> = new Set(['active', 'used']);

/**
 * Sources in the order the next debit draws from them: live ones (active, or used up and still
 * live) by tollgate's own rule, compareSources (docs/grants.md#spend-order); then pending ones
 * by when they start, then ended ones as listed.
 */
export function spendOrder(grants: readonly Grant[]): Grant[] {
  const live = grants.filter((grant) => LIVE.has(grant.status));
  const pending = grants.filter((grant) => grant.status === 'pending');
  const ended = grants.filter((grant) => !LIVE.has(grant.status) && grant.status !== 'pending');
  live.sort((a, b) => compareSources({ ...a, seq: seq(a) }, { ...b, seq: seq(b) }));
  pending.sort((a, b) => a.effectiveAt - b.effectiveAt || seq(a) - seq(b));
  return [...live, ...pending, ...ended];
}
