/**
 * An account's whole quota state on one surface in the reference model (docs/concepts.md):
 * rolls the cycle over and tidies lapsed holds first, and counts nothing.
 */
import type { Usage } from '../rules/usage.ts';
import type { ModelCore } from './core.ts';
import { cycleOf, roll } from './cycles.ts';
import { creditsOf } from './grants.ts';
import { openHolds, tidyIfLapsed } from './holds.ts';
import { surfaceWindows } from './windows.ts';
import { windowsInForce } from './overrides.ts';
import { countWindows, limitState } from './windows.ts';

/** The usage of a subject's account on a surface already checked against the plan table. */
export function usageOf(core: ModelCore, subject: string, surface: string): Usage {
  const a = core.account(subject);
  const now = core.now();
  roll(a, now);
  const windows = windowsInForce(core, subject, undefined, surface, surfaceWindows(a.plan.limits, subject, surface), now);
  tidyIfLapsed(core, a);
  const { rateLimit, windows: states } = limitState(countWindows(a.windows.get(surface) ?? [], windows, now, core.staggerOf(subject), 0));
  return {
    plan: a.plan.name,
    credits: creditsOf(a),
    cycle: cycleOf(a),
    rateLimit: { ...rateLimit, surface },
    windows: states,
    holds: { active: openHolds(a).length, cap: a.plan.holds.cap, maxItems: a.plan.holds.maxItems, surfaces: [...a.plan.holds.surfaces] },
    now,
  };
}
