import type { AccountSnapshot } from "../accounts.ts";
import type { ModelAccount } from "./model.ts";

/**
 * A stored account (accounts.inspect) in the model's shape, so that checkInvariants runs on
 * what Redis holds and a host can compare it with TollgateModel field by field. Operation ids
 * and Idempotency-Key records are not part of a snapshot and come back empty.
 */
export function accountFromSnapshot(s: AccountSnapshot): ModelAccount {
  return {
    plan: s.plan,
    limits: { api: s.limits.api, web: s.limits.web, cap: s.limits.activeJobCap, maxVideos: s.limits.maxVideosPerJob, bulk: s.limits.bulkOnApi },
    allowance: s.credits.allowance,
    nextAllowance: s.credits.nextAllowance,
    balance: s.credits.balance,
    spent: s.credits.spent,
    held: s.credits.held,
    cycle: s.cycle.id,
    cycleStart: s.cycle.start,
    cycleEnd: s.cycle.end,
    anchor: s.cycleSpec.anchor,
    unit: s.cycleSpec.unit,
    length: s.cycleSpec.length,
    windows: s.windows,
    ended: new Map(
      s.endedCycles.map((c) => [c.id, { allowance: c.allowance, unused: c.unused, spent: c.spent, held: c.held, refunded: c.refunded, start: c.start, end: c.end }]),
    ),
    jobs: new Map(
      s.jobs.map((j) => [
        j.id,
        {
          id: j.id,
          kind: j.kind,
          surface: j.surface,
          status: j.status,
          videos: j.videos,
          comments: j.includeComments,
          limit: j.limit,
          reserved: j.reserved,
          delivered: j.delivered,
          failedUnavailable: j.failed.videoUnavailable,
          failedNoCaptions: j.failed.noCaptions,
          commentPages: j.commentPages,
          commentMisses: j.commentMisses,
          spent: j.spent,
          refunded: j.refunded,
          refundedToEndedCycle: j.refundedToEndedCycle,
          cycle: j.cycleId,
          createdAt: j.createdAt,
          finishedAt: j.finishedAt ?? 0,
          leaseExpiresAt: j.leaseExpiresAt,
          endReason: j.endReason ?? "",
        },
      ]),
    ),
    operations: new Map(),
    idempotency: new Map(),
  };
}
