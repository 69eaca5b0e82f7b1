/**
 * Plans and policies. A plan gives an account its surfaces' windows, its
 * credits per cycle and its holds rules; a policy gives windows to subjects that have no
 * account (sign-in attempts per IP). Both tables are checked once at start-up, with messages
 * that name the plan and the field. An account keeps a copy of its plan's numbers (taken at
 * creation and on every plan change), so the scripts need no table lookup and a plan change
 * moves the limits at once.
 */
import { createHash } from 'node:crypto';
import { intervalArgs, type Interval } from './cycles.ts';
import { InvalidInputError, UnknownPlanError } from '../errors.ts';
import { count, MAX_ALLOWANCE } from './validate.ts';
import { checkedWindows, surfaceName, validateSurfaceWindows, windowsSpec, type SurfaceWindows } from './windows.ts';
import { planEventsArg, planEventsSpec, type PlanEvents } from './events.ts';

/** What a plan gives an account: windows per surface, credits per cycle, holds rules. */
export interface Plan {
  /** Each surface's windows (1 to 4), by the host's surface names. */
  limits: SurfaceWindows;
  /** Credits per billing cycle, and the cycle of new accounts (free: 30 days from signup). */
  credits: { allowance: number; cycle: Interval };
  /**
   * Holds: how many may be open at once (cap), items per items hold (maxItems), and the
   * surfaces they may be opened on (a subset of the plan's surfaces).
   */
  holds: { cap: number; maxItems: number; surfaces: readonly string[] };
  /**
   * Events for its accounts (docs/events.md): with it, they write credits.*, cycle.* and
   * hold.* events to their outbox, and fire its thresholds. Without it they write none.
   */
  events?: PlanEvents;
}

/** The host's plans by name (validated by createTollgate). */
export type PlanTable = Readonly<Record<string, Plan>>;

/** Named windows for subjects without an account: { policy: { surface: windows } }. */
export type PolicyTable = Readonly<Record<string, SurfaceWindows>>;

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

function table(what: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length === 0) {
    throw new InvalidInputError(`The ${what} table must name at least one ${what}`);
  }
  for (const name of Object.keys(value)) {
    if (!NAME.test(name)) throw new InvalidInputError(`${what} name ${JSON.stringify(name)} must be 1-64 of A-Z a-z 0-9 _ . -`);
  }
  return value as Record<string, unknown>;
}

/** Checks every plan of a host's table; throws InvalidInputError naming the plan and field. */
export function validatePlans(value: unknown): PlanTable {
  const checked: Record<string, Plan> = {};
  for (const [name, raw] of Object.entries(table('plan', value))) {
    const plan = (raw ?? {}) as Partial<Plan>;
    const at = (field: string) => `Plan "${name}": ${field}`;
    const limits = validateSurfaceWindows(at('limits'), plan.limits);
    const credits = (plan.credits ?? {}) as Partial<Plan['credits']>;
    const holds = (plan.holds ?? {}) as Partial<Plan['holds']>;
    if (typeof plan.credits !== 'object' || plan.credits === null) throw new InvalidInputError(`${at('credits')} must be { allowance, cycle }`);
    if (typeof plan.holds !== 'object' || plan.holds === null) throw new InvalidInputError(`${at('holds')} must be { cap, maxItems, surfaces }`);
    try {
      intervalArgs(credits.cycle);
    } catch (error) {
      throw new InvalidInputError(`${at('credits.cycle')}: ${(error as Error).message}`);
    }
    if (!Array.isArray(holds.surfaces)) throw new InvalidInputError(`${at('holds.surfaces')} must be a list of the plan's surfaces`);
    const surfaces = holds.surfaces.map((s: unknown) => surfaceName(at('holds.surfaces'), s));
    for (const s of surfaces) {
      if (!Object.hasOwn(limits, s))
        throw new InvalidInputError(`${at('holds.surfaces')}: "${s}" is not one of the plan's surfaces (${Object.keys(limits).join(', ')})`);
    }
    const events = planEventsArg(at('events'), plan.events);
    checked[name] = Object.freeze({
      ...(events && { events }),
      limits,
      credits: Object.freeze({ allowance: count(at('credits.allowance'), credits.allowance, 0, MAX_ALLOWANCE), cycle: credits.cycle! }),
      holds: Object.freeze({
        cap: count(at('holds.cap'), holds.cap, 0),
        maxItems: count(at('holds.maxItems'), holds.maxItems, 1),
        surfaces: Object.freeze([...new Set(surfaces)]),
      }),
    });
  }
  return Object.freeze(checked);
}

/** Checks a host's policy table: each policy names its surfaces' windows. */
export function validatePolicies(value: unknown): PolicyTable {
  if (value === undefined) return Object.freeze({});
  const checked: Record<string, SurfaceWindows> = {};
  for (const [name, raw] of Object.entries(table('policy', value))) {
    checked[name] = validateSurfaceWindows(`Policy "${name}"`, raw);
  }
  return Object.freeze(checked);
}

export function planNamed(plans: PlanTable, name: unknown): Plan & { name: string } {
  if (typeof name !== 'string' || !Object.hasOwn(plans, name)) {
    throw new UnknownPlanError(String(name), Object.keys(plans));
  }
  return { name, ...plans[name]! };
}

/** The plan's numbers as createAccount / changePlan take them. */
export function planArgs(plan: Plan & { name: string }) {
  return {
    plan: plan.name,
    allowance: plan.credits.allowance,
    holdsCap: plan.holds.cap,
    holdsMaxItems: plan.holds.maxItems,
    holdsSurfaces: plan.holds.surfaces.join(','),
    windows: Object.entries(plan.limits)
      .map(([surface, windows]) => `${surface}=${windowsSpec(checkedWindows(windows))}`)
      .join(';'),
    events: planEventsSpec(plan.events),
  };
}

/** Every plan with events as setThresholds takes them: 'plan=spec;plan=spec'. */
export function plansEventsSpec(plans: PlanTable): string {
  return Object.entries(plans)
    .flatMap(([name, plan]) => (plan.events ? [`${name}=${planEventsSpec(plan.events)}`] : []))
    .join(';');
}

/**
 * The check of a surface an account is counted on: a name that no plan of the table has is
 * refused before Redis is touched; one the account's own plan lacks is refused by
 * the script (shared with tollgate/model).
 */
export function accountSurfaceCheck(plans: PlanTable): (surface: unknown) => string {
  const surfaces = new Set(Object.values(plans).flatMap((plan) => Object.keys(plan.limits)));
  return (value) => {
    // A surface of the (validated) table is a valid name: the common case needs no pattern.
    if (typeof value === 'string' && surfaces.has(value)) return value;
    const surface = surfaceName('Surface', value);
    if (!surfaces.has(surface)) throw new InvalidInputError(`Surface "${surface}" is not a surface of any plan (${[...surfaces].join(', ')})`);
    return surface;
  };
}

/**
 * The plan table an account's numbers come from, as lib/account.lua compares it: 'v<version>'
 * for createTollgate's plansVersion, else 'd' and a digest of every plan's numbers.
 */
export function plansVersionOf(version: unknown, plans: PlanTable): string {
  if (version !== undefined) return `v${count('plansVersion', version, 0)}`;
  const text = Object.keys(plans)
    .sort()
    .map((name) => {
      // A plan without events keeps the digest it had before plans could have them.
      const { events, ...args } = planArgs(planNamed(plans, name));
      return JSON.stringify(events === 'none' ? args : { ...args, events });
    })
    .join('\n');
  return `d${createHash('sha1').update(text).digest('hex').slice(0, 10)}`;
}
