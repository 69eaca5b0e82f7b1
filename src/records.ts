/**
 * The stored records as the library reports them. The scripts decode each stored hash once
 * and send its attributes by
 * name; this file is the one place that turns those attributes into the public shapes.
 */
import type { AccountCredits, AccountLimits, Credits, Cycle, EndedCycle, Hold, HoldEndReason, HoldKind, HoldStatus } from './rules/records.ts';
import type { CreditSource, Grant, GrantStatus, SourceKind } from './rules/grants.ts';
import { windowsFromSpec } from './rules/windows.ts';
import { decodeHold, type HoldForm } from './scripts/generated/forms.ts';
import { field } from './scripts/reply.ts';

export type { AccountCredits, AccountLimits, Credits, Cycle, EndedCycle, Hold, HoldEndReason, HoldKind, HoldStatus };

/** An account's attributes as lua/lib/account.lua names them. */
export type AccountAttributes = Record<string, unknown> & { windows?: Record<string, string> };

const n = (value: unknown) => Number(value ?? 0);

export function limitsFrom(a: AccountAttributes): AccountLimits {
  const surfaces = String(a.holdsSurfaces ?? '');
  return {
    name: String(a.plan),
    limits: Object.fromEntries(Object.entries(a.windows ?? {}).map(([surface, spec]) => [surface, windowsFromSpec(spec)])),
    credits: { allowance: n(a.nextAllowance) },
    holds: { cap: n(a.holdsCap), maxItems: n(a.holdsMaxItems), surfaces: surfaces === '' ? [] : surfaces.split(',') },
  };
}

export function creditsFrom(a: AccountAttributes): AccountCredits {
  const next = a.nextExpiry;
  return {
    allowance: n(a.allowance),
    balance: n(a.balance),
    spent: n(a.spent),
    held: n(a.held),
    nextAllowance: n(a.nextAllowance),
    available: n(a.available ?? a.balance),
    nextExpiry:
      typeof next === 'object' && next !== null
        ? { grantId: String(field(next, 'grantId')), expiresAt: n(field(next, 'expiresAt')), amount: n(field(next, 'amount')) }
        : null,
  };
}

/**
 * A drawn list as the scripts send it ('c7=5,g3=2': lib/grants.lua) as sources: `cycle:<n>`
 * for a cycle's allowance, `g<n>` for a grant.
 */
export function sourcesFrom(text: string): CreditSource[] {
  if (text === '' || text === '-') return [];
  return text.split(',').map((part) => {
    const [id, amount] = part.split('=');
    return { grantId: id![0] === 'c' ? `cycle:${id!.slice(1)}` : id!, amount: Number(amount) };
  });
}

/** A source of credits from listGrants.lua's JSON (lib/grants.lua). */
export function grantFrom(g: unknown): Grant {
  const optional = (name: string) => {
    const value = field(g, name);
    return value === undefined || value === null ? null : n(value);
  };
  const reason = field(g, 'reason');
  return {
    grantId: String(field(g, 'grantId')),
    kind: String(field(g, 'kind')) as SourceKind,
    priority: n(field(g, 'priority')),
    amount: n(field(g, 'amount')),
    remaining: n(field(g, 'remaining')),
    spent: n(field(g, 'spent')),
    held: n(field(g, 'held')),
    expired: n(field(g, 'expired')),
    voided: n(field(g, 'voided')),
    refundedAfterEnd: n(field(g, 'refundedAfterEnd')),
    effectiveAt: n(field(g, 'effectiveAt')),
    expiresAt: optional('expiresAt'),
    createdAt: n(field(g, 'createdAt')),
    endedAt: optional('endedAt'),
    status: String(field(g, 'status')) as GrantStatus,
    reason: typeof reason === 'string' ? reason : null,
  };
}

export function cycleFrom(a: AccountAttributes): Cycle {
  return { id: n(a.cycle), start: n(a.cycleStart), end: n(a.cycleEnd) };
}

/** The cycle spec: anchor and interval ('d' days or 'm' calendar months). */
export function cycleSpecFrom(a: AccountAttributes): { anchor: number; unit: 'd' | 'm'; length: number } {
  const interval = String(a.interval ?? 'd1');
  return { anchor: n(a.anchor), unit: interval[0] === 'm' ? 'm' : 'd', length: Number(interval.slice(1)) };
}

/** A hold from its reply form (lua/lib/holds.lua's header; decoded by the generated decodeHold). */
export function holdFrom(h: HoldForm): Hold {
  const failed: Record<string, number> = {};
  for (const { label, count } of h.failed) failed[label] = count;
  return {
    id: h.id,
    kind: h.kind,
    status: h.status,
    surface: h.surface,
    items: h.items,
    perItem: { required: h.required, optional: h.optional },
    reserved: h.reserved,
    settled: h.settled,
    delivered: h.delivered,
    failed,
    optionalSpent: h.optionalSpent,
    spent: h.spent,
    refunded: h.refunded,
    refundedToEndedCycle: h.refundedToEndedCycle,
    sources: sourcesFrom(h.sources),
    held: h.reserved - h.spent - h.refunded,
    cycleId: h.cycleId,
    createdAt: h.createdAt,
    endedAt: h.endedAt > 0 ? h.endedAt : null,
    leaseExpiresAt: h.leaseExpiresAt,
    endReason: h.endReason === '' ? null : h.endReason,
  };
}

/** A hold from its reply form as parsed JSON (an Idempotency-Key's stored outcome, inspect's holds). */
export function holdFromJson(value: unknown): Hold {
  return holdFrom(decodeHold(value));
}

/** An account's attributes from the JSON a script sent (lua/lib/account.lua's names). */
export function accountAttributes(value: unknown): AccountAttributes {
  const a: AccountAttributes = typeof value === 'object' && value !== null ? Object.fromEntries(Object.entries(value)) : {};
  const windows = a.windows;
  a.windows =
    typeof windows === 'object' && windows !== null ? Object.fromEntries(Object.entries(windows).map(([surface, spec]) => [surface, String(spec)])) : {};
  return a;
}

export function endedCyclesFrom(list: unknown): EndedCycle[] {
  // cjson sends an empty Lua table as {}.
  if (!Array.isArray(list)) return [];
  return list.map((c: unknown) => ({
    id: n(field(c, 'id')),
    start: n(field(c, 'cycleStart')),
    end: n(field(c, 'cycleEnd')),
    plannedEnd: n(field(c, 'plannedEnd') ?? field(c, 'cycleEnd')),
    allowance: n(field(c, 'allowance')),
    unused: n(field(c, 'unused')),
    spent: n(field(c, 'spent')),
    held: n(field(c, 'held')),
    refunded: n(field(c, 'refunded')),
  }));
}
