/**
 * The video service's plans (docs/example-service.md#plans) in tollgate's plan shape, and the bounds that are the
 * service's own: the comments collection's credit limit (docs/example-service.md#bulk-jobs). A bulk job is a hold of N
 * items (N videos), so `holds.maxItems` is the most videos one job may take; `holds.surfaces`
 * says where jobs may be opened: Free only on the website (`web`), which is how Free accounts
 * get 403 plan_not_allowed for bulk jobs through the API and may still collect comments.
 * The service gives each plan two low-balance thresholds (withLowBalance), which raise
 * `credits.threshold` events (docs/example-service.md#webhooks) for the webhooks and the
 * dashboard's notice.
 */
import type { Plan, PlanTable } from 'tollgate';

/** The credit limit L a website user picks for a comments collection (docs/example-service.md#bulk-jobs). */
export const COLLECTION_LIMIT = { min: 1, max: 10_000 } as const;

/** Our default for the most videos a job may take (the seed does not give one). */
export const MAX_VIDEOS_PER_JOB = 5_000;

const perMinute = (limit: number) => [{ limit, windowMs: 60_000 }];

export const EXAMPLE_PLANS = {
  free: {
    limits: { api: perMinute(30), web: perMinute(30) },
    credits: { allowance: 30, cycle: { days: 30 } },
    holds: { cap: 1, maxItems: MAX_VIDEOS_PER_JOB, surfaces: ['web'] },
  },
  starter: {
    limits: { api: perMinute(100), web: perMinute(100) },
    credits: { allowance: 1_000, cycle: { months: 1 } },
    holds: { cap: 2, maxItems: MAX_VIDEOS_PER_JOB, surfaces: ['api', 'web'] },
  },
  pro: {
    limits: { api: perMinute(300), web: perMinute(300) },
    credits: { allowance: 5_000, cycle: { months: 1 } },
    holds: { cap: 5, maxItems: MAX_VIDEOS_PER_JOB, surfaces: ['api', 'web'] },
  },
  business: {
    limits: { api: perMinute(1_000), web: perMinute(1_000) },
    credits: { allowance: 20_000, cycle: { months: 1 } },
    holds: { cap: 10, maxItems: MAX_VIDEOS_PER_JOB, surfaces: ['api', 'web'] },
  },
} as const satisfies PlanTable;

/**
 * The plans as the service runs them: each plan that names no `events` of its own gets two
 * thresholds (docs/example-service.md#plans), 80% of the cycle's allowance used and a tenth
 * of it or less left. EXAMPLE_PLANS itself stays without them: the library's tests share it.
 */
export function withLowBalance(plans: PlanTable): PlanTable {
  const withEvents = (plan: Plan): Plan =>
    plan.events ? plan : { ...plan, events: { thresholds: [{ usedPercent: 80 }, { below: Math.floor(plan.credits.allowance / 10) }] } };
  return Object.fromEntries(Object.entries(plans).map(([name, plan]) => [name, withEvents(plan)]));
}
