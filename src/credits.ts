/**
 * Charges, the journal reconciliation and the per-day history. A charge takes
 * `required` credits, or none, plus as many `optional` ones as the balance allows, in one
 * atomic script; an operation id makes a retried charge apply once.
 * Scripts: charge, reconcile, creditHistory.
 */
import type { Context } from './context.ts';
import {
  chargeArgs,
  historyDaysArg,
  insufficient,
  newOperationId,
  type ChargeOutcome,
  type ChargeRequest,
  type DayUsage,
  type Reconciliation,
} from './rules/credits.ts';
import { charge, creditHistory, reconcile } from './scripts/bundle.generated.ts';
import { Code } from './scripts/codes.ts';

export type { ChargeOutcome, ChargeRequest, DayUsage, Insufficient, Reconciliation } from './rules/credits.ts';

const DAY_MS = 86_400_000;

/** Credits (`tollgate.credits`): charge, reconcile with the journal, the per-day history. */
export class Credits {
  /** @internal Made by createTollgate. */
  constructor(private readonly ctx: Context) {}

  /**
   * Takes required + min(optional, balance - required) credits, or none when the balance is
   * short, in one atomic script. Charge after the work is done: a failed fetch
   * charges nothing. Give an operation id to make a retry after a timeout apply once.
   *
   * @example
   * ```ts
   * const charge = await tollgate.credits.charge("acct_42", { required: 1, operationId: requestId });
   * if (!charge.ok) return reply(insufficientReply(charge.balance, charge.needed, requestId)); // 402
   * console.log(charge.balance);
   * ```
   */
  async charge(subject: string, request: ChargeRequest): Promise<ChargeOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const { required, optional, operationId: given } = chargeArgs(request);
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const own = given !== '';
    // Every charge has an operation id, so that one sent again applies once: the caller's, or
    // the library's (a durable charge always, for the retry of an unconfirmed one).
    const operationId = own || (!this.ctx.resendIds && !this.ctx.runner.durable) ? given : newOperationId();
    const reply = await this.ctx.runner.move(charge, redisKeys, { required, optional, operationId, madeByLibrary: own ? 0 : 1 }, undefined, operationId);
    const { code, charged, balance, needed } = reply;
    if (code === Code.INSUFFICIENT) return insufficient(balance, needed);
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
