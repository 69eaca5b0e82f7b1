/**
 * Holds' rules: what opening, settling, spending and ending a hold ask and answer (refusals
 * a client can cause are values), and the checks of each request before anything is held.
 */
import { randomBytes } from 'node:crypto';
import { InvalidInputError } from '../errors.ts';
import type { Insufficient } from './credits.ts';
import type { IdempotencyClaim } from './idempotency.ts';
import type { Hold } from './records.ts';
import { count, printableKey, shortId } from './validate.ts';

/** An Idempotency-Key: the claim from idempotency.begin, or a key and the request body. */
export type IdempotencyInput = IdempotencyClaim | { key: string; body: unknown };

/** holds.open's request: an items hold (a bulk job of `items` items). */
export interface OpenHoldRequest {
  /** Items to reserve for (>= 1, at most the plan's holds.maxItems). */
  items: number;
  /** Credits per item: required (always spent by a delivered item) and optional (spent as used). */
  perItem: { required: number; optional?: number };
  /** Default "api"; must be one of the plan's holds.surfaces. */
  surface?: string;
  /** An Idempotency-Key: the same key and body answer the first outcome again. */
  idempotency?: IdempotencyInput;
  /** Defaults to a random id. Opening again with the same id and terms returns the hold. */
  holdId?: string;
  /** This hold's lease (1 ms to 62 days), renewed by each settlement and by holds.renew. Default: createTollgate's leaseMs. */
  leaseMs?: number;
}

/** holds.openBudget's request: a budget hold of `amount` credits, spent as it goes. */
export interface OpenBudgetRequest {
  /** Credits reserved for the whole budget (>= 1). */
  amount: number;
  /** Default "api", as holds.open's; must be one of the plan's holds.surfaces. */
  surface?: string;
  /** An Idempotency-Key: the same key and body answer the first outcome again. */
  idempotency?: IdempotencyInput;
  /** Defaults to a random id. Opening again with the same id and terms returns the hold. */
  holdId?: string;
  /** This hold's lease (1 ms to 62 days), renewed by each spend and by holds.renew. Default: createTollgate's leaseMs. */
  leaseMs?: number;
}

/** holds.renew's outcome: the new lease, or `ended` for a hold that has ended (its lease may have run out first). */
export type RenewOutcome = { ok: true; leaseUntil: number } | { ok: false; reason: 'ended' };

/** The longest lease a hold may have: 62 days, the longest a hold that crosses a cycle needs (internal). */
export const MAX_LEASE_MS = 62 * 86_400_000;

/** A checked lease length (createTollgate's leaseMs, a hold's own leaseMs): 1 ms to 62 days. */
export function leaseArg(what: string, value: unknown): number {
  return count(what, value, 1, MAX_LEASE_MS);
}

/** A hold's checked terms: its size, and its own lease length (0: the deployment's). */
export type HoldSize = { items: number; required: number; optional: number; amount: number; leaseMs: number };

function ownLease(value: unknown): number {
  return value === undefined ? 0 : leaseArg('leaseMs', value);
}

/**
 * A hold's opening: the hold (`available`: the credits every active source has left after it,
 * docs/grants.md), or why nothing was reserved (429 hold_limit_reached, 402
 * insufficient, 403 surface_not_allowed, 400 too_many_items, 422 / 409 for the
 * Idempotency-Key). `replayed`: the answer of an earlier request with the same key or hold id.
 */
export type OpenOutcome =
  | { ok: true; hold: Hold; available: number; replayed: boolean }
  | { ok: false; reason: 'hold_limit_reached'; active: number; cap: number; replayed: boolean }
  | Insufficient
  | SurfaceNotAllowed
  | { ok: false; reason: 'too_many_items'; max: number }
  | { ok: false; reason: 'idempotency_key_reused' }
  | { ok: false; reason: 'idempotency_key_in_use' };

/** A hold asked for on a surface the plan's holds.surfaces does not list (answer 403). */
export interface SurfaceNotAllowed {
  /** Refused. */
  ok: false;
  /** The surface may not hold. */
  reason: 'surface_not_allowed';
  /** The surface asked for. */
  surface: string;
  /** The surfaces the plan's holds may be opened on. */
  surfaces: string[];
  /**
   * The same list under its former name.
   * @deprecated Read `surfaces`; `allowed` stays until 1.0.
   */
  allowed: string[];
}

/** The refusal of a hold on a surface its plan does not open holds on. */
export function surfaceNotAllowed(surface: string, surfaces: string[]): SurfaceNotAllowed {
  return { ok: false, reason: 'surface_not_allowed', surface, surfaces, allowed: surfaces };
}

/** holds.settle's settlement of one item of an items hold. */
export interface Settlement {
  /** Which item this is: an item settles once, a repeat is a replay. 1-255 printable ASCII. */
  itemId: string;
  /** The item failed: nothing is spent and the label is counted (1-64 of a-z 0-9 _ . -). */
  failed?: string;
  /** A delivered item: optional credits it used, 0..perItem.optional. Default 0. */
  optionalSpent?: number;
}

/** holds.spend's draw on a budget hold. */
export interface Spend {
  /** Which draw this is: a repeat is a replay and takes nothing. 1-255 printable ASCII. */
  itemId: string;
  /** Credits to take from the budget; 0 takes nothing and renews the lease. Default 1. */
  amount?: number;
}

/** A settlement's or spend's outcome: accepted, or refused with the reason and the hold as it stands. */
export type SettleOutcome = Settled | SettleRefusal;

/** A settlement or spend taken; `replayed`: this item was settled before, and nothing changed now. */
export interface Settled {
  /** Taken. */
  ok: true;
  /**
   * Taken: the same as `ok`.
   * @deprecated Read `ok`, the success flag of every outcome; `accepted` stays until 1.0.
   */
  accepted: true;
  /** The hold after the call. */
  hold: Hold;
  /** This item was settled before: nothing changed now. */
  replayed: boolean;
}

/** A settlement or spend refused: nothing changed. */
export interface SettleRefusal {
  /** Refused. */
  ok: false;
  /**
   * Refused: the same as `ok`.
   * @deprecated Read `ok`, the success flag of every outcome; `accepted` stays until 1.0.
   */
  accepted: false;
  /** Why: the hold has ended, its lease lapsed, the budget is too small, or the item's label would be one too many. */
  reason: 'hold_ended' | 'lease_expired' | 'budget_exhausted' | 'too_many_labels';
  /** The hold as it stands. */
  hold: Hold;
}

/** holds.finish's and holds.cancel's outcome. */
export interface EndOutcome {
  /** True when this call ended the hold; false when it had already ended: nothing was refunded again. */
  ok: boolean;
  /**
   * The same as `ok`.
   * @deprecated Read `ok`, the success flag of every outcome; `ended` stays until 1.0.
   */
  ended: boolean;
  /** The hold after the call, with its refunds. */
  hold: Hold;
}

/** A settlement or spend taken (`replayed` when the item was settled before). */
export function settled(hold: Hold, replayed: boolean): Settled {
  return { ok: true, accepted: true, hold, replayed };
}

/** A settlement or spend refused, with the hold as it stands. */
export function settleRefused(reason: SettleRefusal['reason'], hold: Hold): SettleRefusal {
  return { ok: false, accepted: false, reason, hold };
}

/** A finish's or cancel's outcome: whether this call ended the hold. */
export function endOutcome(ended: boolean, hold: Hold): EndOutcome {
  return { ok: ended, ended, hold };
}

const LABEL = /^[a-z0-9_.-]{1,64}$/;

function newHoldId(): string {
  return `hold_${randomBytes(12).toString('base64url')}`;
}

/** The checked size of an items hold (shared with tollgate/model). */
export function openArgs(request: OpenHoldRequest): HoldSize {
  const items = count('items', request?.items, 1);
  const required = count('perItem.required', request.perItem?.required);
  const optional = count('perItem.optional', request.perItem?.optional ?? 0);
  if (required + optional === 0) throw new InvalidInputError('perItem must hold at least 1 credit (required + optional)');
  return { items, required, optional, amount: 0, leaseMs: ownLease(request.leaseMs) };
}

/** The checked size of a budget hold (shared with tollgate/model). */
export function budgetArgs(request: OpenBudgetRequest): HoldSize {
  return { items: 0, required: 0, optional: 0, amount: count('amount', request?.amount, 1), leaseMs: ownLease(request.leaseMs) };
}

/** A checked settlement of an items hold (shared with tollgate/model). */
export function settleArgs(settlement: Settlement): { itemId: string; failed: string; optionalSpent: number; amount: number } {
  // Only an absent label means delivered: an empty one is bad input, not a delivery to charge.
  const label = settlement?.failed;
  if (label !== undefined && (typeof label !== 'string' || !LABEL.test(label))) {
    throw new InvalidInputError(`A failure label must be 1-64 characters of a-z 0-9 _ . - (got ${JSON.stringify(label)})`);
  }
  const failed = label ?? '';
  const optionalSpent = count('optionalSpent', settlement.optionalSpent ?? 0);
  if (failed !== '' && optionalSpent > 0) throw new InvalidInputError('A failed item spends nothing: optionalSpent must be 0');
  return { itemId: printableKey('Item id', settlement.itemId), failed, optionalSpent, amount: 0 };
}

/** A checked spend of a budget hold (shared with tollgate/model). */
export function spendArgs(spend: Spend): { itemId: string; failed: string; optionalSpent: number; amount: number } {
  return { itemId: printableKey('Item id', spend?.itemId), failed: '', optionalSpent: 0, amount: count('amount', spend.amount ?? 1) };
}

/** A checked hold id, or a new one when the caller gave none. */
export function holdIdArg(given: string | undefined): { holdId: string; own: boolean } {
  return given === undefined ? { holdId: newHoldId(), own: false } : { holdId: shortId('Hold id', given), own: true };
}
