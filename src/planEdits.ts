/**
 * Plan edits reach every account (docs/limits.md, "Plan edits"): an admit whose account holds
 * numbers from an older plan table answers PLANS_BEHIND before counting anything; its plan's
 * numbers from this table are written (as a plan change to the same plan: windows and holds
 * rules at once, the allowance from the next cycle, the counts kept) and the admit runs again.
 * At most once per account per table change: the hot path stays one round trip.
 */
import type { Context } from './context.ts';
import { planArgs, planNamed } from './rules/plans.ts';
import type { SubjectKeys } from './redisKeys.ts';
import { changePlan } from './scripts/bundle.generated.ts';
import { Code } from './scripts/codes.ts';
import type { ScriptReply } from './scripts/script.ts';

/** An admit's answer that the account's numbers are from an older table. */
interface Behind {
  readonly code: typeof Code.PLANS_BEHIND;
  readonly plan: string;
}

/** What a plan that has left the table writes: nothing but the version (it keeps its numbers). */
const GONE = { plan: '', allowance: 0, holdsCap: 0, holdsMaxItems: 0, holdsSurfaces: '', windows: '', events: 'none' };

/** Runs an admit; while the account is behind this table, refreshes it and runs it again. */
export async function withCurrentPlan<R extends ScriptReply>(
  ctx: Context,
  redisKeys: SubjectKeys,
  call: () => Promise<R | Behind>,
): Promise<Exclude<R, Behind>> {
  for (let round = 0; ; round++) {
    const reply = await call();
    if (reply.code !== Code.PLANS_BEHIND || round === 2) return reply as Exclude<R, Behind>;
    const name = (reply as Behind).plan;
    const plan = Object.hasOwn(ctx.plans, name) ? planArgs(planNamed(ctx.plans, name)) : GONE;
    await ctx.runner.run(changePlan, redisKeys, { ...plan, startNow: 0, unit: '', length: 0, refresh: 1 });
    ctx.denyCache?.forget(redisKeys.subject);
  }
}
