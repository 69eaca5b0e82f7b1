/**
 * Plan tables (SPEC §2). DEFAULT_PLANS is the seed's preset; a host passes its own table,
 * checked once at start-up by validatePlans. An account keeps a copy of its plan's numbers
 * (taken at creation and on every plan change), so the scripts need no table lookup.
 */
import { InvalidInputError, UnknownPlanError } from "./errors.ts";
import { intervalArgs, type Interval } from "./cycles.ts";
import { count } from "./validate.ts";

export interface Plan {
  /** Requests per 60 s window on surface `api` (REST and MCP share it). */
  requestsPerMinute: number;
  /** Requests per window on surface `web`; defaults to requestsPerMinute. */
  webRequestsPerMinute?: number;
  creditsPerCycle: number;
  /** Whether bulk jobs may be created on surface `api`. */
  bulkJobs: boolean;
  activeJobCap: number;
  maxVideosPerJob: number;
  /** Cycle interval of new accounts on this plan: free counts 30 days from signup. */
  cycle: Interval;
}

export type PlanTable = Readonly<Record<string, Plan>>;

export const DEFAULT_PLANS = {
  free: { requestsPerMinute: 30, creditsPerCycle: 30, bulkJobs: false, activeJobCap: 1, maxVideosPerJob: 5000, cycle: { days: 30 } },
  starter: { requestsPerMinute: 100, creditsPerCycle: 1000, bulkJobs: true, activeJobCap: 2, maxVideosPerJob: 5000, cycle: { months: 1 } },
  pro: { requestsPerMinute: 300, creditsPerCycle: 5000, bulkJobs: true, activeJobCap: 5, maxVideosPerJob: 5000, cycle: { months: 1 } },
  business: { requestsPerMinute: 1000, creditsPerCycle: 20000, bulkJobs: true, activeJobCap: 10, maxVideosPerJob: 5000, cycle: { months: 1 } },
} as const satisfies PlanTable;

const PLAN_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Checks every plan of a host's table; throws InvalidInputError naming the bad field. */
export function validatePlans(table: unknown): PlanTable {
  if (typeof table !== "object" || table === null || Object.keys(table).length === 0) {
    throw new InvalidInputError("The plan table must name at least one plan");
  }
  const checked: Record<string, Plan> = {};
  for (const [name, raw] of Object.entries(table)) {
    if (!PLAN_NAME.test(name)) throw new InvalidInputError(`Plan name ${JSON.stringify(name)} must be 1-64 of A-Z a-z 0-9 _ . -`);
    const plan = (raw ?? {}) as Partial<Plan>;
    const at = (field: string) => `Plan "${name}": ${field}`;
    if (typeof plan.bulkJobs !== "boolean") throw new InvalidInputError(`${at("bulkJobs")} must be true or false`);
    intervalArgs(plan.cycle);
    checked[name] = {
      requestsPerMinute: count(at("requestsPerMinute"), plan.requestsPerMinute, 1),
      webRequestsPerMinute: count(at("webRequestsPerMinute"), plan.webRequestsPerMinute ?? plan.requestsPerMinute, 1),
      creditsPerCycle: count(at("creditsPerCycle"), plan.creditsPerCycle, 0),
      bulkJobs: plan.bulkJobs,
      activeJobCap: count(at("activeJobCap"), plan.activeJobCap, 0),
      maxVideosPerJob: count(at("maxVideosPerJob"), plan.maxVideosPerJob, 1),
      cycle: plan.cycle!,
    };
  }
  return Object.freeze(checked);
}

export function planNamed(table: PlanTable, name: unknown): Plan & { name: string } {
  if (typeof name !== "string" || !Object.hasOwn(table, name)) {
    throw new UnknownPlanError(String(name), Object.keys(table));
  }
  return { name, ...table[name]! };
}

/** The plan's numbers as the createAccount / changePlan scripts take them. */
export function planArgs(plan: Plan & { name: string }) {
  return {
    plan: plan.name,
    allowance: plan.creditsPerCycle,
    rpmApi: plan.requestsPerMinute,
    rpmWeb: plan.webRequestsPerMinute ?? plan.requestsPerMinute,
    jobCap: plan.activeJobCap,
    maxVideos: plan.maxVideosPerJob,
    bulk: plan.bulkJobs ? 1 : 0,
  };
}
