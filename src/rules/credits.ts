/**
 * Credits' rules: what a charge asks and answers (insufficient credits are a value, and a
 * refused charge takes nothing), and the checks of a charge and a history read.
 */
import { randomBytes } from 'node:crypto';
import { InvalidInputError } from '../errors.ts';
import type { CreditSource } from './grants.ts';
import { count, printableKey } from './validate.ts';

/** credits.charge's request: `required` credits or none, plus what the balance allows of `optional`. */
export interface ChargeRequest {
  /** Credits the work costs for sure: all taken, or nothing when the balance is short. */
  required: number;
  /** Credits taken as far as the balance allows once `required` is (e.g. pages beyond the first). Default 0. */
  optional?: number;
  /**
   * Makes a retried charge (e.g. after a timeout) apply once: 1-255 printable ASCII, kept
   * operationTtlMs (24 h), and at least 60 s when a subject holds more than 1,000 ids. Without
   * one, the library gives the charge an id of its own, so a command the Redis client resends
   * by itself still applies once; a StoreUnavailableError (or UnconfirmedError) carries it, for
   * a retry.
   */
  operationId?: string;
}

/**
 * A charge's outcome: taken (`replayed` when this operation id was charged before and nothing
 * was taken again), or refused whole for insufficient credits (answer 402). `balance` is the
 * current cycle's; `available` every active source's (the cycle's balance and the active
 * grants' credits); `sources` what each source gave, in spend order.
 */
export type ChargeOutcome = Charged | Insufficient;

/**
 * A charge taken: `charged` credits from `sources` in spend order (docs/grants.md#spend-order);
 * `balance` is the current cycle's, `available` every live source's.
 */
export interface Charged {
  /** Taken. */
  ok: true;
  /** Credits taken: required plus the optional ones available. */
  charged: number;
  /** The current cycle's balance after the charge. */
  balance: number;
  /** What every live source (the cycle and the active grants) has left after the charge. */
  available: number;
  /** Where the credits came from, in the order they were drawn (a replay: the first charge's). */
  sources: CreditSource[];
  /** This operation id was charged before: the first charge's answer, nothing taken now. */
  replayed: boolean;
}

/** Refused whole for insufficient credits: nothing was taken (answer 402 insufficient_quota). */
export interface Insufficient {
  /** Refused. */
  ok: false;
  /** Credits were short. */
  reason: 'insufficient';
  /** The current cycle's balance. */
  balance: number;
  /** Credits available: the cycle's balance and the active grants' credits (what was compared with `needed`). */
  available: number;
  /**
   * The balance, under its former name.
   * @deprecated Read `balance`; `remaining` stays until 1.0.
   */
  remaining: number;
  /** Credits the request needed. */
  needed: number;
}

/** The refusal of a charge or a hold for insufficient credits (available: the cycle's balance and the active grants'). */
export function insufficient(balance: number, needed: number, available = balance): Insufficient {
  return { ok: false, reason: 'insufficient', balance, remaining: balance, needed, available };
}

/** credits.reconcile's answer: the current cycle recomputed from the credit journal. */
export interface Reconciliation {
  /** False when the cycle's opening entry was trimmed from the journal or it is off. */
  complete: boolean;
  /** The cycle reconciled. */
  cycle: number;
  /** What the journal adds up to, and what the account holds. */
  journal: { balance: number; spent: number; held: number };
  /** What the account holds. */
  stored: { balance: number; spent: number; held: number };
  /** Journal entries read for the cycle. */
  entries: number;
  /** complete and both agree. */
  matches: boolean;
}

/** Credits spent and refunded on one UTC day. */
export interface DayUsage {
  /** The day's start, ms since the epoch (UTC midnight). */
  day: number;
  /** Credits spent that day (charges, and holds' settled items). */
  spent: number;
  /** Credits refunded that day. */
  refunded: number;
}

/** The checked span of a history read: 30 days by default, at most the days kept (shared with tollgate/model). */
export function historyDaysArg(options: { days?: number }, historyDays: number): number {
  const kept = Math.max(1, historyDays);
  return count('days', options.days ?? Math.min(30, kept), 1, kept);
}

/** An operation id of the library's, for a durable charge the caller named none. */
export function newOperationId(): string {
  return `op_${randomBytes(12).toString('base64url')}`;
}

/** A checked charge (shared with tollgate/model); operationId "" when the caller gave none. */
export function chargeArgs(request: ChargeRequest): { required: number; optional: number; operationId: string } {
  const required = count('required', request?.required);
  const optional = count('optional', request.optional ?? 0);
  if (required + optional === 0) throw new InvalidInputError('A charge must ask for at least 1 credit');
  const operationId = request.operationId === undefined ? '' : printableKey('Operation id', request.operationId);
  return { required, optional, operationId };
}
