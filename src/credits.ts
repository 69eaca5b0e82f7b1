/**
 * Charges (SPEC §5), the journal reconciliation and the per-day history. A charge takes
 * `required` credits, or none, plus as many `optional` ones as the balance allows, in one
 * atomic script; an operation id makes a retried charge apply once.
 * Scripts: lua/charge.lua, lua/reconcile.lua, lua/creditHistory.lua.
 */
import { randomBytes } from "node:crypto";
import type { Context } from "./context.ts";
import { InvalidInputError } from "./errors.ts";
import { charge, creditHistory, reconcile } from "./scripts/bundle.generated.ts";
import { Code } from "./scripts/codes.ts";
import { count, printableKey } from "./validate.ts";

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
 * was taken again), or refused whole for insufficient credits (answer 402).
 */
export type ChargeOutcome =
  | { ok: true; charged: number; balance: number; replayed: boolean }
  | { ok: false; reason: "insufficient"; remaining: number; needed: number };

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

const DAY_MS = 86_400_000;

/** The checked span of a history read: 30 days by default, at most the days kept (shared with tollgate/model). */
export function historyDaysArg(options: { days?: number }, historyDays: number): number {
  const kept = Math.max(1, historyDays);
  return count("days", options.days ?? Math.min(30, kept), 1, kept);
}

/** An operation id of the library's, for a durable charge the caller named none. */
export function newOperationId(): string {
  return `op_${randomBytes(12).toString("base64url")}`;
}

/** A checked charge (shared with tollgate/model); operationId "" when the caller gave none. */
export function chargeArgs(request: ChargeRequest): { required: number; optional: number; operationId: string } {
  const required = count("required", request?.required);
  const optional = count("optional", request.optional ?? 0);
  if (required + optional === 0) throw new InvalidInputError("A charge must ask for at least 1 credit");
  const operationId = request.operationId === undefined ? "" : printableKey("Operation id", request.operationId);
  return { required, optional, operationId };
}

/** Credits (`tollgate.credits`): charge, reconcile with the journal, the per-day history. */
export class Credits {
  /** @internal Made by createTollgate. */
  constructor(private readonly ctx: Context) {}

  /**
   * Takes required + min(optional, balance - required) credits, or none when the balance is
   * short, in one atomic script. Charge after the work is done (SPEC §5): a failed fetch
   * charges nothing. Give an operation id to make a retry after a timeout apply once.
   *
   * @example
   * ```ts
   * const charge = await tollgate.credits.charge("acct_42", { required: 1, operationId: requestId });
   * if (!charge.ok) return reply(insufficientReply(charge.remaining, charge.needed, requestId)); // 402
   * console.log(charge.balance);
   * ```
   */
  async charge(subject: string, request: ChargeRequest): Promise<ChargeOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const { required, optional, operationId: given } = chargeArgs(request);
    const own = given !== "";
    // Every charge has an operation id, so that one sent again applies once: the caller's, or
    // the library's (a durable charge always, for the retry of an unconfirmed one).
    const operationId = own || (!this.ctx.resendIds && !this.ctx.runner.durable) ? given : newOperationId();
    const reply = await this.ctx.runner.move(charge, redisKeys, { required, optional, operationId, madeByLibrary: own ? 0 : 1 }, undefined, operationId);
    const { code, charged, balance, needed } = reply;
    if (code === Code.INSUFFICIENT) return { ok: false, reason: "insufficient", remaining: balance, needed };
    // A replay of an id the library made up is a resent command: to the caller, one charge.
    return { ok: true, charged, balance, replayed: own && code === Code.REPLAYED };
  }

  /** Recomputes the current cycle from the journal and compares it with the account. */
  async reconcile(subject: string): Promise<Reconciliation> {
    const redisKeys = this.ctx.redisKeys(subject);
    const r = await this.ctx.runner.run(reconcile, redisKeys, {});
    return {
      complete: r.complete,
      cycle: r.cycle,
      journal: { balance: r.journalBalance, spent: r.journalSpent, held: r.journalHeld },
      stored: { balance: r.balance, spent: r.spent, held: r.held },
      entries: r.entries,
      matches: r.complete && r.journalBalance === r.balance && r.journalSpent === r.spent && r.journalHeld === r.held,
    };
  }

  /**
   * Credits spent and refunded per UTC day over the last `days` days (today included), oldest
   * first; days without a movement are left out. A charge counts when made, a hold's credits
   * when settled. Kept for the `history.days` of createTollgate (default 92); `days`
   * defaults to 30, or to every kept day when fewer are kept.
   */
  async history(subject: string, options: { days?: number } = {}): Promise<DayUsage[]> {
    const redisKeys = this.ctx.redisKeys(subject);
    const days = historyDaysArg(options, this.ctx.historyDays);
    const reply = await this.ctx.runner.run(creditHistory, redisKeys, { days });
    return reply.days.map((d) => ({ day: d.day * DAY_MS, spent: d.spent, refunded: d.refunded }));
  }
}
