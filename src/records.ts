/**
 * The stored records as the library reports them. The scripts decode each stored hash once
 * and send its attributes by
 * name; this file is the one place that turns those attributes into the public shapes.
 */
import { HOLD_REPLY } from "./scripts/bundle.generated.ts";
import { windowsFromSpec, type SurfaceWindows } from "./windows.ts";

/** items: reserved per item and settled item by item; budget: an amount spent as it goes. */
export type HoldKind = "items" | "budget";
/** open until it is finished, cancelled, settled in full, used up or its lease lapses. */
export type HoldStatus = "open" | "completed" | "canceled";
/** settled: every item settled; exhausted: a budget used up; lease_expired: its worker stopped reporting. */
export type HoldEndReason = "settled" | "exhausted" | "finished" | "canceled" | "lease_expired";

/** A hold: credits reserved upfront for a bulk job or a budget, as holds.get and the settle calls report it. */
export interface Hold {
  /** The hold id (the caller's `holdId`, or a random `hold_...`). */
  id: string;
  /** items or budget. */
  kind: HoldKind;
  /** open, completed or canceled. */
  status: HoldStatus;
  /** The surface the hold was opened on (one of the plan's holds.surfaces). */
  surface: string;
  /** Items reserved for; 0 for a budget. */
  items: number;
  /** Credits per item: required (spent by a delivered item) and optional (spent as used). */
  perItem: { required: number; optional: number };
  /** Credits taken from the balance when the hold opened. */
  reserved: number;
  /** Items settled (delivered or failed); a budget: spends. */
  settled: number;
  /** Items settled without a failure; a budget: spends of 1 credit or more. */
  delivered: number;
  /** Failed items by label. */
  failed: Record<string, number>;
  /** Optional credits spent, over all items. */
  optionalSpent: number;
  /** Credits spent so far (required and optional). */
  spent: number;
  /** Credits given back: by failed items, and what was left when the hold ended. */
  refunded: number;
  /** Part of `refunded` that went to an ended cycle and raised no balance. */
  refundedToEndedCycle: number;
  /** Still reserved: reserved - spent - refunded; 0 once the hold has ended. */
  held: number;
  /** The cycle that paid. */
  cycleId: number;
  /** When it opened (ms since the epoch). */
  createdAt: number;
  /** When it ended; null while open. */
  endedAt: number | null;
  /** When an open hold lapses unless a settlement renews it (createTollgate's leaseMs). */
  leaseExpiresAt: number;
  /** Why it ended; null while open. */
  endReason: HoldEndReason | null;
}

/** A billing cycle of an account: [start, end) in ms since the epoch. */
export interface Cycle {
  /** 1 for the account's first cycle, then 2, 3, ... */
  id: number;
  /** Its first instant. */
  start: number;
  /** The first instant after it. */
  end: number;
}

/** The summary of a cycle that has ended, archived at rollover. */
export interface EndedCycle extends Cycle {
  /** The credits the cycle started with. */
  allowance: number;
  /** Credits left unused when the cycle ended; they do not roll over. */
  unused: number;
  /** Credits spent in the cycle. */
  spent: number;
  /** Still held by holds that cycle paid for. */
  held: number;
  /** Refunded to the ended cycle after it ended; never added to a later balance. */
  refunded: number;
}

/** The plan's numbers as an account holds them (refreshed by changePlan). */
export interface AccountLimits {
  /** The plan's name. */
  name: string;
  /** The plan's windows per surface. */
  limits: SurfaceWindows;
  /** The allowance of the next cycle (this cycle's may differ after a plan change). */
  credits: { allowance: number };
  /** Holds: at most `cap` open at once, of at most `maxItems` items, opened on `surfaces`. */
  holds: { cap: number; maxItems: number; surfaces: string[] };
}

/** An account's credits in its current cycle: `balance + spent + held == allowance`. */
export interface Credits {
  /** Credits the cycle started with. */
  allowance: number;
  /** Credits left to spend or reserve. */
  balance: number;
  /** Credits spent in the cycle. */
  spent: number;
  /** Credits reserved by open holds of this cycle. */
  held: number;
  /** The allowance from the next cycle on. */
  nextAllowance: number;
}

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

export function creditsFrom(a: AccountAttributes): Credits {
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
