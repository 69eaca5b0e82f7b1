import { currentPeriod, periodStart } from "../cycles.ts";
import type { Plan, PlanTable } from "../plans.ts";

type Unit = "d" | "m";
type Surface = "api" | "web";

export interface ModelCycle {
  allowance: number;
  unused: number;
  spent: number;
  held: number;
  refunded: number;
  start: number;
  end: number;
}

export interface ModelJob {
  id: string;
  kind: "bulk" | "collection";
  surface: Surface;
  status: "queued" | "running" | "completed" | "canceled";
  videos: number;
  comments: boolean;
  limit: number;
  reserved: number;
  delivered: number;
  failedUnavailable: number;
  failedNoCaptions: number;
  commentPages: number;
  commentMisses: number;
  spent: number;
  refunded: number;
  refundedToEndedCycle: number;
  cycle: number;
  createdAt: number;
  finishedAt: number;
  leaseExpiresAt: number;
  endReason: string;
}

export interface ModelAccount {
  plan: string;
  limits: { api: number; web: number; cap: number; maxVideos: number; bulk: boolean };
  allowance: number;
  nextAllowance: number;
  balance: number;
  spent: number;
  held: number;
  cycle: number;
  cycleStart: number;
  cycleEnd: number;
  anchor: number;
  unit: Unit;
  length: number;
  windows: Record<Surface, { window: number; used: number }>;
  ended: Map<number, ModelCycle>;
  jobs: Map<string, ModelJob>;
  operations: Map<string, number>;
  idempotency: Map<string, { fingerprint: string; code: "job" | "job_limit_reached"; payload: unknown }>;
}

export type ModelReserve =
  | { ok: true; job: ModelJob; replayed: boolean }
  | { ok: false; reason: "job_limit_reached"; active: number; cap: number; replayed: boolean }
  | { ok: false; reason: "insufficient"; remaining: number; needed: number }
  | { ok: false; reason: "plan_not_allowed" | "too_many_videos" | "idempotency_key_reused" };

export type ModelSettle = { accepted: true } | { accepted: false; reason: "job_ended" | "lease_expired" };

/** The rules of SPEC §3-7 over plain objects. Every method takes "now" in ms. */
export class TollgateModel {
  readonly accounts = new Map<string, ModelAccount>();

  constructor(
    private readonly plans: PlanTable,
    private readonly options: { windowMs?: number; leaseMs: number },
  ) {}

  private get windowMs() {
    return this.options.windowMs ?? 60_000;
  }

  private plan(name: string): Plan {
    const plan = this.plans[name];
    if (!plan) throw new Error(`model: unknown plan ${name}`);
    return plan;
  }

  private account(id: string): ModelAccount {
    const a = this.accounts.get(id);
    if (!a) throw new Error(`model: no account ${id}`);
    return a;
  }

  createAccount(id: string, planName: string, now: number, cycle: { anchor?: number; unit: Unit; length: number }): boolean {
    if (this.accounts.has(id)) return false;
    const plan = this.plan(planName);
    const anchor = cycle.anchor ?? now;
    const period = currentPeriod(anchor, cycle.unit, cycle.length, now);
    this.accounts.set(id, {
      plan: planName,
      limits: limitsOf(plan),
      allowance: plan.creditsPerCycle,
      nextAllowance: plan.creditsPerCycle,
      balance: plan.creditsPerCycle,
      spent: 0,
      held: 0,
      cycle: 1,
      cycleStart: period.start,
      cycleEnd: period.end,
      anchor,
      unit: cycle.unit,
      length: cycle.length,
      windows: { api: { window: -1, used: 0 }, web: { window: -1, used: 0 } },
      ended: new Map(),
      jobs: new Map(),
      operations: new Map(),
      idempotency: new Map(),
    });
    return true;
  }

  /** SPEC §3: archive the cycle and open a new one with the next allowance. */
  private openCycle(a: ModelAccount, start: number, end: number) {
    a.ended.set(a.cycle, {
      allowance: a.allowance,
      unused: a.balance,
      spent: a.spent,
      held: a.held,
      refunded: 0,
      start: a.cycleStart,
      end: a.cycleEnd,
    });
    a.cycle += 1;
    a.allowance = a.nextAllowance;
    a.balance = a.nextAllowance;
    a.spent = 0;
    a.held = 0;
    a.cycleStart = start;
    a.cycleEnd = end;
  }

  /** Lazy rollover: bring the account to the cycle containing now. */
  roll(id: string, now: number) {
    const a = this.account(id);
    if (now < a.cycleEnd) return;
    const p = currentPeriod(a.anchor, a.unit, a.length, now);
    this.openCycle(a, p.start, p.end);
  }

  private reanchor(a: ModelAccount, now: number, unit?: Unit, length?: number) {
    if (unit) a.unit = unit;
    if (length) a.length = length;
    a.anchor = now;
    this.openCycle(a, now, periodStart(now, a.unit, a.length, 1));
  }

  startCycle(id: string, now: number, unit?: Unit, length?: number) {
    this.reanchor(this.account(id), now, unit, length);
  }

  changePlan(id: string, now: number, planName: string, startNow: boolean) {
    this.roll(id, now);
    const a = this.account(id);
    const plan = this.plan(planName);
    a.plan = planName;
    a.limits = limitsOf(plan);
    a.nextAllowance = plan.creditsPerCycle;
    if (startNow) this.reanchor(a, now);
  }

  /**
   * SPEC §4: fixed window; a denied request is not counted; pre-check after counting. Admit
   * does not roll the cycle over: past the cycle end the pre-check sees the next allowance,
   * which is what the next credit movement will find.
   */
  admit(id: string, now: number, surface: Surface, credits: number) {
    const a = this.account(id);
    const balance = now >= a.cycleEnd ? a.nextAllowance : a.balance;
    const limit = a.limits[surface];
    const window = Math.floor(now / this.windowMs);
    const w = a.windows[surface];
    const used = w.window === window ? w.used : 0;
    const resetMs = (window + 1) * this.windowMs - now;
    if (used >= limit) return { allowed: false as const, limit, remaining: 0, resetMs };
    a.windows[surface] = { window, used: used + 1 };
    const sufficient = credits === 0 || balance >= credits;
    return { allowed: true as const, limit, remaining: limit - used - 1, resetMs, sufficient, balance };
  }

  /** SPEC §5: required + min(optional, balance - required), once per operation id. */
  charge(id: string, now: number, required: number, optional: number, operationId?: string) {
    const a = this.account(id);
    this.roll(id, now);
    if (operationId !== undefined && a.operations.has(operationId)) {
      return { ok: true as const, charged: a.operations.get(operationId)!, replayed: true };
    }
    if (a.balance < required) return { ok: false as const, remaining: a.balance, needed: required };
    const charged = required + Math.min(optional, a.balance - required);
    a.balance -= charged;
    a.spent += charged;
    if (operationId !== undefined) a.operations.set(operationId, charged);
    return { ok: true as const, charged, replayed: false };
  }

  private spend(a: ModelAccount, job: ModelJob, n: number) {
    if (job.cycle === a.cycle) {
      a.held -= n;
      a.spent += n;
    } else {
      const c = a.ended.get(job.cycle)!;
      c.held -= n;
      c.spent += n;
    }
    job.spent += n;
  }

  /** SPEC §6: a refund goes to the cycle that paid; an ended cycle records it only. */
  private refund(a: ModelAccount, job: ModelJob, n: number) {
    if (n <= 0) return;
    if (job.cycle === a.cycle) {
      a.held -= n;
      a.balance += n;
    } else {
      const c = a.ended.get(job.cycle)!;
      c.held -= n;
      c.refunded += n;
      job.refundedToEndedCycle += n;
    }
    job.refunded += n;
  }

  private endJob(a: ModelAccount, job: ModelJob, now: number, status: "completed" | "canceled", reason: string) {
    this.refund(a, job, job.reserved - job.spent - job.refunded);
    job.status = status;
    job.endReason = reason;
    job.finishedAt = now;
  }

  private isOpen(job: ModelJob) {
    return job.status === "queued" || job.status === "running";
  }

  activeJobs(id: string): ModelJob[] {
    return [...this.account(id).jobs.values()].filter((j) => this.isOpen(j));
  }

  /** End every open job whose lease ran out (now >= lease). */
  expireLapsed(id: string, now: number): number {
    const a = this.account(id);
    const lapsed = this.activeJobs(id).filter((j) => now >= j.leaseExpiresAt);
    for (const job of lapsed) this.endJob(a, job, now, "completed", "lease_expired");
    return lapsed.length;
  }

  reserve(
    id: string,
    now: number,
    spec: { jobId: string; kind: "bulk" | "collection"; surface: Surface; videos: number; comments: boolean; limit: number; idempotency?: { key: string; fingerprint: string } },
  ): ModelReserve {
    const a = this.account(id);
    // SPEC §3: a script that touches an account first works out the current cycle.
    this.roll(id, now);
    const idem = spec.idempotency;
    if (idem) {
      const stored = a.idempotency.get(idem.key);
      if (stored && stored.fingerprint !== idem.fingerprint) return { ok: false, reason: "idempotency_key_reused" };
      if (stored?.code === "job") return { ok: true, job: structuredClone(stored.payload as ModelJob), replayed: true };
      if (stored) {
        const p = stored.payload as { active: number; cap: number };
        return { ok: false, reason: "job_limit_reached", active: p.active, cap: p.cap, replayed: true };
      }
    }
    this.expireLapsed(id, now);
    if (spec.kind === "bulk" && spec.surface === "api" && !a.limits.bulk) return { ok: false, reason: "plan_not_allowed" };
    if (spec.kind === "bulk" && spec.videos > a.limits.maxVideos) return { ok: false, reason: "too_many_videos" };
    const active = this.activeJobs(id).length;
    if (active >= a.limits.cap) {
      if (idem) a.idempotency.set(idem.key, { fingerprint: idem.fingerprint, code: "job_limit_reached", payload: { active, cap: a.limits.cap } });
      return { ok: false, reason: "job_limit_reached", active, cap: a.limits.cap, replayed: false };
    }
    const reserve = spec.kind === "bulk" ? spec.videos * (spec.comments ? 2 : 1) : spec.limit;
    if (a.balance < reserve) return { ok: false, reason: "insufficient", remaining: a.balance, needed: reserve };
    a.balance -= reserve;
    a.held += reserve;
    const job: ModelJob = {
      id: spec.jobId,
      kind: spec.kind,
      surface: spec.surface,
      status: "queued",
      videos: spec.videos,
      comments: spec.comments,
      limit: spec.limit,
      reserved: reserve,
      delivered: 0,
      failedUnavailable: 0,
      failedNoCaptions: 0,
      commentPages: 0,
      commentMisses: 0,
      spent: 0,
      refunded: 0,
      refundedToEndedCycle: 0,
      cycle: a.cycle,
      createdAt: now,
      finishedAt: 0,
      leaseExpiresAt: now + this.options.leaseMs,
      endReason: "",
    };
    a.jobs.set(job.id, job);
    if (idem) a.idempotency.set(idem.key, { fingerprint: idem.fingerprint, code: "job", payload: structuredClone(job) });
    return { ok: true, job: structuredClone(job), replayed: false };
  }

  private accepting(a: ModelAccount, job: ModelJob, now: number): ModelSettle | undefined {
    if (!this.isOpen(job)) return { accepted: false, reason: "job_ended" };
    if (now >= job.leaseExpiresAt) {
      this.endJob(a, job, now, "completed", "lease_expired");
      return { accepted: false, reason: "lease_expired" };
    }
    return undefined;
  }

  private renew(job: ModelJob, now: number) {
    job.status = "running";
    job.leaseExpiresAt = now + this.options.leaseMs;
  }

  recordResult(id: string, now: number, jobId: string, transcript: "delivered" | "video_unavailable" | "no_captions", commentPage?: "nonempty" | "empty" | "failed"): ModelSettle {
    this.roll(id, now);
    const a = this.account(id);
    const job = a.jobs.get(jobId)!;
    const refused = this.accepting(a, job, now);
    if (refused) return refused;
    if (transcript === "delivered") {
      job.delivered += 1;
      this.spend(a, job, 1);
      if (job.comments) {
        if (commentPage === "nonempty") {
          job.commentPages += 1;
          this.spend(a, job, 1);
        } else {
          job.commentMisses += 1;
        }
      }
    } else if (transcript === "video_unavailable") {
      job.failedUnavailable += 1;
    } else {
      job.failedNoCaptions += 1;
    }
    this.renew(job, now);
    if (job.delivered + job.failedUnavailable + job.failedNoCaptions === job.videos) this.endJob(a, job, now, "completed", "completed");
    return { accepted: true };
  }

  recordPage(id: string, now: number, jobId: string, page: "nonempty" | "empty" | "failed"): ModelSettle {
    this.roll(id, now);
    const a = this.account(id);
    const job = a.jobs.get(jobId)!;
    const refused = this.accepting(a, job, now);
    if (refused) return refused;
    if (page === "nonempty") {
      job.commentPages += 1;
      this.spend(a, job, 1);
    } else {
      job.commentMisses += 1;
    }
    this.renew(job, now);
    if (job.commentPages >= job.limit) this.endJob(a, job, now, "completed", "limit_reached");
    return { accepted: true };
  }

  /** finish (completed) or cancel; ending an ended job changes nothing. */
  end(id: string, now: number, jobId: string, status: "completed" | "canceled"): boolean {
    this.roll(id, now);
    const a = this.account(id);
    const job = a.jobs.get(jobId)!;
    if (!this.isOpen(job)) return false;
    this.endJob(a, job, now, status, status === "canceled" ? "canceled" : "finished");
    return true;
  }

  /** What usage / readJob / sweep do before they read: roll over, end lapsed jobs. */
  observe(id: string, now: number) {
    this.roll(id, now);
    this.expireLapsed(id, now);
  }
}

function limitsOf(plan: Plan) {
  return {
    api: plan.requestsPerMinute,
    web: plan.webRequestsPerMinute ?? plan.requestsPerMinute,
    cap: plan.activeJobCap,
    maxVideos: plan.maxVideosPerJob,
    bulk: plan.bulkJobs,
  };
}
