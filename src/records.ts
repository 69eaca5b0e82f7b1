/**
 * The stored records as the library reports them. The scripts decode each stored hash once
 * (lua/lib/account.lua, lua/lib/holds.lua, lua/lib/cycle.lua) and send its attributes by
 * name; this file is the one place that turns those attributes into the public shapes.
 */
import { decodeHold, type HoldForm } from "./scripts/generated/forms.ts";
import { field } from "./scripts/reply.ts";
import { windowsFromSpec, type SurfaceWindows } from "./windows.ts";

/** items: reserved per item and settled item by item; budget: an amount spent as it goes (SPEC §10). */
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
  /** Part of `refunded` that went to an ended cycle and raised no balance (SPEC §6). */
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

/** A billing cycle of an account: [start, end) in ms since the epoch (SPEC §3). */
export interface Cycle {
  /** 1 for the account's first cycle, then 2, 3, ... */
  id: number;
  /** Its first instant. */
  start: number;
  /** The first instant after it. */
  end: number;
}

/** The summary of a cycle that has ended, archived at rollover (SPEC §3). */
export interface EndedCycle extends Cycle {
  /**
   * When the cycle was planned to end. `end` is when it really ended: earlier than this when a
   * new cycle was started before it (startCycle, changePlan with startNewCycle), so ended cycles
   * never overlap the current one.
   */
  plannedEnd: number;
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

/** An account's credits in its current cycle: `balance + spent + held == allowance` (SPEC §3). */
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
    held: h.reserved - h.spent - h.refunded,
    cycleId: h.cycleId,
    createdAt: h.createdAt,
    endedAt: h.endedAt > 0 ? h.endedAt : null,
    leaseExpiresAt: h.leaseExpiresAt,
    endReason: h.endReason === "" ? null : h.endReason,
  };
}

/** A hold from its reply form as parsed JSON (an Idempotency-Key's stored outcome, inspect's holds). */
export function holdFromJson(value: unknown): Hold {
  return holdFrom(decodeHold(value));
}

/** An account's attributes from the JSON a script sent (lua/lib/account.lua's names). */
export function accountAttributes(value: unknown): AccountAttributes {
  const a: AccountAttributes = typeof value === "object" && value !== null ? Object.fromEntries(Object.entries(value)) : {};
  const windows = a.windows;
  a.windows = typeof windows === "object" && windows !== null ? Object.fromEntries(Object.entries(windows).map(([surface, spec]) => [surface, String(spec)])) : {};
  return a;
}

export function endedCyclesFrom(list: unknown): EndedCycle[] {
  // cjson sends an empty Lua table as {}.
  if (!Array.isArray(list)) return [];
  return list.map((c: unknown) => ({
    id: n(field(c, "id")),
    start: n(field(c, "cycleStart")),
    end: n(field(c, "cycleEnd")),
    plannedEnd: n(field(c, "plannedEnd") ?? field(c, "cycleEnd")),
    allowance: n(field(c, "allowance")),
    unused: n(field(c, "unused")),
    spent: n(field(c, "spent")),
    held: n(field(c, "held")),
    refunded: n(field(c, "refunded")),
  }));
}
