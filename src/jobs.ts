/**
 * Bulk jobs and comments collections (SPEC §6): reserve upfront in one atomic step, settle
 * item by item, finish or cancel with refunds to the cycle that paid, and reclaim jobs whose
 * worker stopped reporting (leases and sweep). Outcomes a client can cause are values; only
 * missing accounts/jobs, bad input and store failures throw.
 * Scripts: lua/reserveJob.lua, lua/recordResult.lua (results and pages), lua/endJob.lua,
 * lua/readJob.lua, lua/listJobs.lua, lua/sweepJobs.lua, lua/sweepHint.lua, lua/dueSweeps.lua.
 */
import { randomBytes } from "node:crypto";
import type { Context } from "./context.ts";
import { AccountNotFoundError, InvalidInputError, JobNotFoundError } from "./errors.ts";
import { decodeStoredOutcome, fingerprint, type IdempotencyClaim } from "./idempotency.ts";
import { sweepIndexKey } from "./keys.ts";
import { jobFromFields, type Job, type JobKind } from "./jobRecord.ts";
import { SURFACES, type Surface } from "./limits.ts";
import { Code } from "./scripts/codes.ts";
import { count, oneOf, printableKey } from "./validate.ts";

export type TranscriptResult = "delivered" | "video_unavailable" | "no_captions";
export type CommentPageResult = "nonempty" | "empty" | "failed";

/** Bounds of a collection's credit limit (SPEC §6). */
export const COLLECTION_LIMIT = { min: 1, max: 10_000 } as const;

/** An Idempotency-Key: the claim from idempotency.begin, or a key and body given here. */
export type IdempotencyInput = IdempotencyClaim | { key: string; body: unknown };

export interface ReserveRequest {
  /** N videos resolved (>= 1, at most the plan's max per job). */
  videos: number;
  includeComments?: boolean;
  surface?: Surface;
  idempotency?: IdempotencyInput;
  /** Defaults to a random id. */
  jobId?: string;
}

export interface CollectionRequest {
  /** Credit limit L reserved for the whole collection (1..10,000 and <= balance). */
  limit: number;
  surface?: Surface;
  idempotency?: IdempotencyInput;
  jobId?: string;
}

export type ReserveOutcome =
  | { ok: true; job: Job; replayed: boolean }
  | { ok: false; reason: "job_limit_reached"; active: number; cap: number; replayed: boolean }
  | { ok: false; reason: "insufficient"; remaining: number; needed: number }
  | { ok: false; reason: "plan_not_allowed"; plan: string }
  | { ok: false; reason: "too_many_videos"; max: number }
  | { ok: false; reason: "idempotency_key_reused" }
  | { ok: false; reason: "idempotency_key_in_use" };

export type SettleOutcome =
  /** replayed: this item's result had been taken before, and nothing changed now. */
  | { accepted: true; job: Job; replayed: boolean }
  | { accepted: false; reason: "job_ended" | "lease_expired"; job: Job };

export interface EndOutcome {
  /** False when the job had already ended: nothing was refunded again. */
  ended: boolean;
  job: Job;
}

const JOB_ID = /^[A-Za-z0-9_-]{1,64}$/;

function checkJobId(value: unknown): string {
  if (typeof value !== "string" || !JOB_ID.test(value)) {
    throw new InvalidInputError("Job id must be 1-64 characters of A-Z a-z 0-9 _ -");
  }
  return value;
}

export function newJobId(): string {
  return `job_${randomBytes(12).toString("base64url")}`;
}

export class Jobs {
  constructor(private readonly ctx: Context) {}

  /** Creates a bulk job: N credits reserved, 2N with comments (SPEC §6). */
  async reserve(accountId: string, request: ReserveRequest): Promise<ReserveOutcome> {
    const videos = count("videos", request.videos, 1);
    return this.create(accountId, {
      kind: "bulk",
      surface: request.surface ?? "api",
      videos,
      comments: request.includeComments === true ? 1 : 0,
      limit: 0,
      idempotency: request.idempotency,
      jobId: request.jobId,
    });
  }

  /** Creates a standalone comments collection reserving its limit L (SPEC §6). */
  async reserveCollection(accountId: string, request: CollectionRequest): Promise<ReserveOutcome> {
    const limit = count("Collection limit", request.limit, COLLECTION_LIMIT.min, COLLECTION_LIMIT.max);
    return this.create(accountId, {
      kind: "collection",
      surface: request.surface ?? "web",
      videos: 0,
      comments: 0,
      limit,
      idempotency: request.idempotency,
      jobId: request.jobId,
    });
  }

  private async create(
    accountId: string,
    spec: { kind: JobKind; surface: Surface; videos: number; comments: number; limit: number; idempotency?: IdempotencyInput; jobId?: string },
  ): Promise<ReserveOutcome> {
    const keys = this.ctx.keys(accountId);
    const surface = oneOf("Surface", spec.surface, SURFACES);
    const ownJobId = spec.jobId !== undefined;
    const jobId = ownJobId ? checkJobId(spec.jobId) : newJobId();
    const claim = claimOf(spec.idempotency);
    const leaseMs = this.ctx.leaseMs;
    // The sweep index learns of the account before the job exists, so a crash between the two
    // can never leave a job that no sweep will find.
    const [, reply] = await Promise.all([
      this.markForSweep(keys.id, this.hintNow() + leaseMs),
      this.ctx.runner.run(
        "reserveJob",
        {
          account: keys.account,
          cycles: keys.cycles,
          journal: keys.journal,
          activeJobs: keys.activeJobs,
          jobList: keys.jobList,
          job: keys.job(jobId),
          idempotency: keys.idempotency(claim?.key ?? ""),
        },
        {
          nowMs: this.ctx.now(),
          jobId,
          kind: spec.kind,
          surface,
          videos: spec.videos,
          comments: spec.comments,
          limit: spec.limit,
          leaseMs,
          idemKey: claim?.key ?? "",
          fingerprint: claim?.fingerprint ?? "",
          idemToken: claim?.token ?? "",
          idemTtlMs: this.ctx.idempotencyTtlMs,
          jobKeyPrefix: keys.jobPrefix,
          ...this.ctx.journal,
        },
      ),
    ]);
    const code = Number(reply[0]);
    const payload = String(reply[1] ?? "");
    const data = payload ? (JSON.parse(payload) as Record<string, unknown>) : {};
    switch (code) {
      case Code.OK:
        return { ok: true, job: jobFromFields(data), replayed: false };
      case Code.REPLAYED: {
        const stored = decodeStoredOutcome(Number(reply[2]), payload);
        // The same job id answered by its job: a resent command unless the caller chose the id.
        const resent = !claim && !ownJobId;
        return stored.kind === "job"
          ? { ok: true, job: stored.job, replayed: !resent }
          : { ok: false, reason: "job_limit_reached", active: stored.active, cap: stored.cap, replayed: true };
      }
      case Code.JOB_LIMIT:
        return { ok: false, reason: "job_limit_reached", active: Number(data.active), cap: Number(data.cap), replayed: false };
      case Code.INSUFFICIENT:
        return { ok: false, reason: "insufficient", remaining: Number(data.balance), needed: Number(data.needed) };
      case Code.PLAN_NOT_ALLOWED:
        return { ok: false, reason: "plan_not_allowed", plan: String(data.plan) };
      case Code.TOO_MANY_VIDEOS:
        return { ok: false, reason: "too_many_videos", max: Number(data.max) };
      case Code.IDEMPOTENCY_REUSED:
        return { ok: false, reason: "idempotency_key_reused" };
      case Code.IDEMPOTENCY_IN_USE:
        return { ok: false, reason: "idempotency_key_in_use" };
      case Code.JOB_EXISTS:
        throw new InvalidInputError(`Job id "${jobId}" is already taken`);
      case Code.NO_ACCOUNT:
        throw new AccountNotFoundError(keys.id);
      default:
        throw new Error(`reserveJob returned an unknown code ${code}`);
    }
  }

  /**
   * Settles one video of a bulk job: its transcript outcome and, for jobs with comments, its
   * Top comments page. Renews the lease; the last result completes the job with its refunds.
   */
  async recordResult(
    accountId: string,
    jobId: string,
    result: { transcript: TranscriptResult; commentPage?: CommentPageResult; itemId?: string },
  ): Promise<SettleOutcome> {
    const keys = this.ctx.keys(accountId);
    const id = checkJobId(jobId);
    const transcript = oneOf("Transcript result", result.transcript, ["delivered", "video_unavailable", "no_captions"] as const);
    const commentPage = result.commentPage === undefined ? "none" : oneOf("Comment page result", result.commentPage, ["nonempty", "empty", "failed"] as const);
    const itemId = this.itemId(result.itemId);
    const reply = await this.ctx.runner.run(
      "recordResult",
      { ...this.jobKeys(keys, id), jobItems: keys.jobItems(id) },
      { nowMs: this.ctx.now(), kind: "bulk", transcript, commentPage, leaseMs: this.ctx.leaseMs, jobKeyPrefix: keys.jobPrefix, ...this.ctx.journal, itemId: itemId.id },
    );
    return settleOutcome(reply, keys.id, jobId, itemId.own);
  }

  /** Settles one page fetched by a comments collection (replies included). */
  async recordPage(accountId: string, jobId: string, page: CommentPageResult, options: { itemId?: string } = {}): Promise<SettleOutcome> {
    const keys = this.ctx.keys(accountId);
    const id = checkJobId(jobId);
    const checked = oneOf("Comment page result", page, ["nonempty", "empty", "failed"] as const);
    const itemId = this.itemId(options.itemId);
    const reply = await this.ctx.runner.run(
      "recordResult",
      { ...this.jobKeys(keys, id), jobItems: keys.jobItems(id) },
      { nowMs: this.ctx.now(), kind: "collection", transcript: "", commentPage: checked, leaseMs: this.ctx.leaseMs, jobKeyPrefix: keys.jobPrefix, ...this.ctx.journal, itemId: itemId.id },
    );
    return settleOutcome(reply, keys.id, jobId, itemId.own);
  }

  /**
   * The item a result is for: the caller's id (a video id, a page token), so a retried result
   * counts once, or a random one that still makes a client's resend count once.
   */
  private itemId(given: string | undefined): { id: string; own: boolean } {
    return given === undefined ? { id: this.ctx.newId(), own: false } : { id: printableKey("Item id", given), own: true };
  }

  /** Ends a job now as completed, refunding whatever it did not use. */
  async finish(accountId: string, jobId: string): Promise<EndOutcome> {
    return this.end(accountId, jobId, "completed", "finished");
  }

  /** Cancels a job: refunds every undelivered item; a second cancel refunds nothing (SPEC §6). */
  async cancel(accountId: string, jobId: string): Promise<EndOutcome> {
    return this.end(accountId, jobId, "canceled", "canceled");
  }

  private async end(accountId: string, jobId: string, status: "completed" | "canceled", reason: "finished" | "canceled"): Promise<EndOutcome> {
    const keys = this.ctx.keys(accountId);
    const reply = await this.ctx.runner.run(
      "endJob",
      this.jobKeys(keys, checkJobId(jobId)),
      { nowMs: this.ctx.now(), status, reason, jobKeyPrefix: keys.jobPrefix, ...this.ctx.journal },
    );
    const code = Number(reply[0]);
    if (code === Code.NO_ACCOUNT) throw new AccountNotFoundError(keys.id);
    if (code === Code.NO_JOB) throw new JobNotFoundError(jobId);
    return { ended: code === Code.OK, job: jobFromFields(JSON.parse(String(reply[1]))) };
  }

  /** One job of the account (another account's job id is not found). Spends nothing. */
  async get(accountId: string, jobId: string): Promise<Job> {
    const keys = this.ctx.keys(accountId);
    const reply = await this.ctx.runner.run(
      "readJob",
      this.jobKeys(keys, checkJobId(jobId)),
      { nowMs: this.ctx.now(), jobKeyPrefix: keys.jobPrefix, ...this.ctx.journal },
    );
    const code = Number(reply[0]);
    if (code === Code.NO_ACCOUNT) throw new AccountNotFoundError(keys.id);
    if (code === Code.NO_JOB) throw new JobNotFoundError(jobId);
    return jobFromFields(JSON.parse(String(reply[1])));
  }

  /** The account's jobs, newest first. */
  async list(accountId: string, page: { offset?: number; limit?: number } = {}): Promise<{ total: number; active: number; jobs: Job[] }> {
    const keys = this.ctx.keys(accountId);
    const reply = await this.ctx.runner.run(
      "listJobs",
      { account: keys.account, cycles: keys.cycles, journal: keys.journal, activeJobs: keys.activeJobs, jobList: keys.jobList },
      {
        nowMs: this.ctx.now(),
        offset: count("offset", page.offset ?? 0),
        count: count("limit", page.limit ?? 50, 0, 1000),
        jobKeyPrefix: keys.jobPrefix,
        ...this.ctx.journal,
      },
    );
    if (Number(reply[0]) === Code.NO_ACCOUNT) throw new AccountNotFoundError(keys.id);
    return {
      total: Number(reply[1]),
      active: Number(reply[2]),
      jobs: reply.slice(3).map((raw) => jobFromFields(JSON.parse(String(raw)))),
    };
  }

  /** Ends the account's jobs whose lease ran out, with their refunds. */
  async sweepAccount(accountId: string): Promise<{ ended: number; nextLeaseAt: number | null }> {
    const keys = this.ctx.keys(accountId);
    const reply = await this.ctx.runner.run(
      "sweepJobs",
      { account: keys.account, cycles: keys.cycles, journal: keys.journal, activeJobs: keys.activeJobs },
      { nowMs: this.ctx.now(), jobKeyPrefix: keys.jobPrefix, ...this.ctx.journal },
    );
    if (Number(reply[0]) === Code.NO_ACCOUNT) return { ended: 0, nextLeaseAt: null };
    const next = Number(reply[2]);
    return { ended: Number(reply[1]), nextLeaseAt: next < 0 ? null : next };
  }

  /**
   * Ends every lapsed job of the deployment, account by account, so no credit or cap slot
   * stays locked (SPEC §6). Safe to run from many servers at once: each account is swept by
   * an atomic script, and the index entry only moves if nobody moved it meanwhile.
   */
  async sweep(options: { batch?: number; maxRounds?: number } = {}): Promise<{ accounts: number; ended: number }> {
    const batch = count("batch", options.batch ?? 100, 1, 10_000);
    const maxRounds = count("maxRounds", options.maxRounds ?? 100, 1);
    let accounts = 0;
    let ended = 0;
    for (let round = 0; round < maxRounds; round++) {
      const reply = await this.ctx.runner.run("dueSweeps", { sweepIndex: sweepIndexKey(this.ctx.prefix) }, { nowMs: this.ctx.now(), count: batch });
      const due: Array<[string, string]> = [];
      for (let i = 2; i < reply.length; i += 2) due.push([String(reply[i]), String(reply[i + 1])]);
      for (const [accountId, seenScore] of due) {
        const swept = await this.sweepAccount(accountId);
        accounts++;
        ended += swept.ended;
        await this.ctx.runner.run(
          "sweepHint",
          { sweepIndex: sweepIndexKey(this.ctx.prefix) },
          { accountId, seenScore, nextScore: swept.nextLeaseAt ?? -1 },
        );
      }
      if (due.length < batch) break;
    }
    return { accounts, ended };
  }

  private markForSweep(accountId: string, score: number) {
    return this.ctx.runner.run("sweepHint", { sweepIndex: sweepIndexKey(this.ctx.prefix) }, { accountId, seenScore: "", nextScore: score });
  }

  private hintNow(): number {
    const now = this.ctx.now();
    return now >= 0 ? now : Date.now();
  }

  private jobKeys(keys: ReturnType<Context["keys"]>, jobId: string) {
    return { account: keys.account, cycles: keys.cycles, journal: keys.journal, activeJobs: keys.activeJobs, job: keys.job(jobId) };
  }
}

function claimOf(input: IdempotencyInput | undefined): IdempotencyClaim | undefined {
  if (input === undefined) return undefined;
  if ("token" in input) return input;
  return { key: printableKey("Idempotency-Key", input.key), fingerprint: fingerprint(input.body), token: "" };
}

function settleOutcome(reply: unknown[], accountId: string, jobId: string, ownItemId: boolean): SettleOutcome {
  const code = Number(reply[0]);
  if (code === Code.NO_ACCOUNT) throw new AccountNotFoundError(accountId);
  if (code === Code.NO_JOB) throw new JobNotFoundError(jobId);
  if (code === Code.WRONG_JOB_KIND) throw new InvalidInputError(`Job "${jobId}" is not of the kind this call settles`);
  const job = jobFromFields(JSON.parse(String(reply[1])));
  if (code === Code.OK || code === Code.REPLAYED) return { accepted: true, job, replayed: ownItemId && code === Code.REPLAYED };
  // A job takes no more results once every video has one: it has ended (job_ended).
  return { accepted: false, reason: code === Code.LEASE_EXPIRED ? "lease_expired" : "job_ended", job };
}
