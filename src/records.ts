/**
 * The stored records as the library reports them. The scripts decode each stored hash once
 * (lua/lib/account.lua, lua/lib/holds.lua, lua/lib/cycle.lua) and send its attributes by
 * name; this file is the one place that turns those attributes into the public shapes.
 */
import type { AccountCredits, AccountLimits, Credits, Cycle, EndedCycle, Hold, HoldEndReason, HoldKind, HoldStatus } from "./rules/records.ts";
import { windowsFromSpec } from "./rules/windows.ts";
import { HOLD_REPLY } from "./scripts/bundle.generated.ts";

export type { AccountCredits, AccountLimits, Credits, Cycle, EndedCycle, Hold, HoldEndReason, HoldKind, HoldStatus };

/** An account's attributes as lua/lib/account.lua names them. */
export type AccountAttributes = Record<string, unknown> & { windows?: Record<string, string> };

const n = (value: unknown) => Number(value ?? 0);

export function limitsFrom(a: AccountAttributes): AccountLimits {
  const surfaces = String(a.holdsSurfaces ?? "");
  return {
    name: String(a.plan),
    limits: Object.fromEntries(Object.entries(a.windows ?? {}).map(([surface, spec]) => [surface, windowsFromSpec(spec)])),
    credits: { allowance: n(a.nextAllowance) },
    holds: { cap: n(a.holdsCap), maxItems: n(a.holdsMaxItems), surfaces: surfaces === "" ? [] : surfaces.split(",") },
  };
}

export function creditsFrom(a: AccountAttributes): AccountCredits {
  return { allowance: n(a.allowance), balance: n(a.balance), spent: n(a.spent), held: n(a.held), nextAllowance: n(a.nextAllowance) };
}

export function cycleFrom(a: AccountAttributes): Cycle {
  return { id: n(a.cycle), start: n(a.cycleStart), end: n(a.cycleEnd) };
}

/** The cycle spec: anchor and interval ('d' days or 'm' calendar months). */
export function cycleSpecFrom(a: AccountAttributes): { anchor: number; unit: "d" | "m"; length: number } {
  const interval = String(a.interval ?? "d1");
  return { anchor: n(a.anchor), unit: interval[0] === "m" ? "m" : "d", length: Number(interval.slice(1)) };
}

/**
 * A hold from its reply form (lua/lib/holds.lua's HOLD_REPLY, whose positions the bundle
 * exports): its attributes, then its failure labels as label, count pairs.
 */
export function holdFromReply(reply: unknown): Hold {
  const r = reply as unknown[];
  const at = (position: number) => r[position - 1];
  const num = (position: number) => Number(at(position) ?? 0);
  const P = HOLD_REPLY;
  const failed: Record<string, number> = {};
  for (let i = P.labels; i + 1 < r.length; i += 2) failed[String(r[i])] = Number(r[i + 1]);
  const endReason = String(at(P.endReason) ?? "");
  return {
    id: String(at(P.id)),
    kind: at(P.kind) as HoldKind,
    status: at(P.status) as HoldStatus,
    surface: String(at(P.surface)),
    items: num(P.items),
    perItem: { required: num(P.required), optional: num(P.optional) },
    reserved: num(P.reserved),
    settled: num(P.settled),
    delivered: num(P.delivered),
    failed,
    optionalSpent: num(P.optionalSpent),
    spent: num(P.spent),
    refunded: num(P.refunded),
    refundedToEndedCycle: num(P.refundedToEndedCycle),
    held: num(P.reserved) - num(P.spent) - num(P.refunded),
    cycleId: num(P.cycleId),
    createdAt: num(P.createdAt),
    endedAt: num(P.endedAt) > 0 ? num(P.endedAt) : null,
    leaseExpiresAt: num(P.leaseExpiresAt),
    endReason: endReason === "" ? null : (endReason as HoldEndReason),
  };
}

export function endedCyclesFrom(list: unknown): EndedCycle[] {
  // cjson sends an empty Lua table as {}.
  if (!Array.isArray(list)) return [];
  return list.map((c: Record<string, unknown>) => ({
    id: n(c.id),
    start: n(c.cycleStart),
    end: n(c.cycleEnd),
    allowance: n(c.allowance),
    unused: n(c.unused),
    spent: n(c.spent),
    held: n(c.held),
    refunded: n(c.refunded),
  }));
}
