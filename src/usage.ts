/**
 * The whole quota state of an account (SPEC §9 usage body), read without counting a request
 * (SPEC §4: usage is free). Script: lua/usage.lua.
 */
import type { Context } from "./context.ts";
import { AccountNotFoundError } from "./errors.ts";
import { SURFACES, type RateLimitState, type Surface } from "./limits.ts";
import { Code } from "./scripts/codes.ts";
import { oneOf } from "./validate.ts";

export interface Usage {
  plan: string;
  credits: { allowance: number; balance: number; spent: number; held: number; nextAllowance: number };
  cycle: { id: number; start: number; end: number };
  rateLimit: RateLimitState & { surface: Surface };
  jobs: { active: number; cap: number; maxVideos: number; bulkOnApi: boolean };
  /** The time the state was read at (the injected clock or Redis TIME). */
  now: number;
}

export async function readUsage(ctx: Context, accountId: string, surfaceName: Surface = "api"): Promise<Usage> {
  const keys = ctx.keys(accountId);
  const surface = oneOf("Surface", surfaceName, SURFACES);
  const reply = await ctx.runner.run(
    "usage",
    { account: keys.account, cycles: keys.cycles, journal: keys.journal, activeJobs: keys.activeJobs },
    { nowMs: ctx.now(), windowMs: ctx.windowMs, jobKeyPrefix: keys.jobPrefix, ...ctx.journal, counterPrefix: keys.counters(surface) },
  );
  if (Number(reply[0]) === Code.NO_ACCOUNT) throw new AccountNotFoundError(keys.id);
  const a = JSON.parse(String(reply[1])) as Record<string, number | string>;
  const n = (field: string) => Number(a[field] ?? 0);
  const limit = n(surface === "api" ? "rpa" : "rpw");
  return {
    plan: String(a.plan),
    credits: { allowance: n("alw"), balance: n("bal"), spent: n("spent"), held: n("held"), nextAllowance: n("nalw") },
    cycle: { id: n("cyc"), start: n("cs"), end: n("ce") },
    rateLimit: { surface, limit, remaining: Math.max(0, limit - n("used")), resetMs: n("resetMs") },
    jobs: { active: n("active"), cap: n("cap"), maxVideos: n("maxv"), bulkOnApi: n("bulk") === 1 },
    now: n("now"),
  };
}
