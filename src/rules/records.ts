// The records as the library reports them: holds, cycles, an account's plan numbers and its
// credits. src/records.ts turns the scripts' replies into these shapes.
import type { CreditSource } from './grants.ts';
import type { SurfaceWindows } from './windows.ts';

/** items: reserved per item and settled item by item; budget: an amount spent as it goes. */
export type HoldKind = 'items' | 'budget';
/** open until it is finished, cancelled, settled in full, used up or its lease lapses. */
export type HoldStatus = 'open' | 'completed' | 'canceled';
/** settled: every item settled; exhausted: a budget used up; lease_expired: its worker stopped reporting. */
export type HoldEndReason = 'settled' | 'exhausted' | 'finished' | 'canceled' | 'lease_expired';

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
  /** Part of `refunded` that went to an ended source (a cycle over, a grant expired or voided) and raised no balance. */
  refundedToEndedCycle: number;
  /** Still reserved: reserved - spent - refunded; 0 once the hold has ended. */
  held: number;
  /** The cycle current when it opened (it paid what `sources` lists under `cycle:<n>`). */
  cycleId: number;
  /**
   * What each source gave when it opened, in draw order (docs/grants.md#holds): spends use
   * them from the front, refunds go back from the end.
   */
  sources: CreditSource[];
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

/** An account's credits in its current cycle: `balance + spent + held == allowance`. */
export interface AccountCredits {
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
  /** What can be spent now: the cycle's balance and every active grant's remaining. */
  available: number;
  /** The active grant with credits left that expires first (the cycle's end is `cycle.end`); null when none expires. */
  nextExpiry: { grantId: string; expiresAt: number; amount: number } | null;
}

/**
 * An account's credits in its current cycle.
 * @deprecated Use `AccountCredits`: from 1.0, `Credits` names the credits API (`tollgate.credits`, now `CreditsApi`).
 */
export type Credits = AccountCredits;
