/**
 * The job record as the library reports it (SPEC §9 job body, in camelCase), decoded from the
 * job hash that lua/lib/jobs.lua keeps. Shared by jobs, idempotency replays and inspect.
 */
import type { Surface } from "./limits.ts";

export type JobStatus = "queued" | "running" | "completed" | "canceled";
export type JobKind = "bulk" | "collection";

export interface Job {
  id: string;
  kind: JobKind;
  surface: Surface;
  status: JobStatus;
  /** N videos (bulk); 0 for a collection. */
  videos: number;
  includeComments: boolean;
  /** A collection's credit limit L; 0 for bulk. */
  limit: number;
  reserved: number;
  delivered: number;
  failed: { videoUnavailable: number; noCaptions: number };
  /** Nonempty comment pages paid for. */
  commentPages: number;
  /** Comment results that spent nothing (empty or failed). */
  commentMisses: number;
  spent: number;
  refunded: number;
  /** Part of `refunded` that went to an ended cycle and raised no balance. */
  refundedToEndedCycle: number;
  /** Still reserved: reserved - spent - refunded. 0 once the job has ended. */
  held: number;
  cycleId: number;
  createdAt: number;
  finishedAt: number | null;
  leaseExpiresAt: number;
  endReason: "completed" | "finished" | "canceled" | "limit_reached" | "lease_expired" | null;
}

export function jobFromFields(f: Record<string, unknown>): Job {
  const n = (k: string) => Number(f[k] ?? 0);
  return {
    id: String(f.id),
    kind: f.kind as JobKind,
    surface: f.sf as Surface,
    status: f.st as JobStatus,
    videos: n("n"),
    includeComments: n("cm") === 1,
    limit: n("lim"),
    reserved: n("rsv"),
    delivered: n("dlv"),
    failed: { videoUnavailable: n("fu"), noCaptions: n("fn") },
    commentPages: n("cp"),
    commentMisses: n("ce"),
    spent: n("sp"),
    refunded: n("rf"),
    refundedToEndedCycle: n("rfe"),
    held: n("rsv") - n("sp") - n("rf"),
    cycleId: n("cyc"),
    createdAt: n("ca"),
    finishedAt: n("fa") > 0 ? n("fa") : null,
    leaseExpiresAt: n("ls"),
    endReason: f.er ? (f.er as Job["endReason"]) : null,
  };
}
