/**
 * Charges, grants, adjustments and refunds, the journal reconciliation and the per-day
 * history. A charge takes `required` credits, or none, plus as many `optional` ones as the
 * credits available allow, in one atomic script, from the sources in spend order (the
 * cycle's allowance and the grants, docs/grants.md); an operation id makes a retried charge
 * apply once. Scripts: charge, grant, voidGrant, listGrants, adjust, refund, reconcile,
 * creditHistory.
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
import { GrantNotFoundError } from './errors.ts';
import { grantFrom, sourcesFrom } from './records.ts';
import {
  adjustArgs,
  expiryNotAfterStart,
  grantArgs,
  grantLimitReached,
  refundArgs,
  voidArgs,
  type AdjustOutcome,
  type AdjustRequest,
  type Grant,
  type GrantOutcome,
  type GrantRequest,
  type ListGrantsOptions,
  type RefundOutcome,
  type RefundRequest,
  type VoidGrantOptions,
  type VoidOutcome,
} from './rules/grants.ts';
import { adjust, charge, creditHistory, grant, listGrants, reconcile, refund, voidGrant } from './scripts/bundle.generated.ts';
import { Code } from './scripts/codes.ts';
import { list } from './scripts/reply.ts';
import { markCycleEnd } from './sweep.ts';

export type { Charged, ChargeOutcome, ChargeRequest, DayUsage, Insufficient, Reconciliation } from './rules/credits.ts';
export type {
  AdjustOutcome,
  AdjustRequest,
  CreditSource,
  Grant,
  GrantKind,
  GrantOutcome,
  GrantRequest,
  GrantsOptions,
  GrantStatus,
  ListGrantsOptions,
  RefundOutcome,
  RefundRequest,
  SourceKind,
  VoidGrantOptions,
  VoidOutcome,
} from './rules/grants.ts';

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
    const { code, charged, balance, needed, available } = reply;
    if (code === Code.INSUFFICIENT) return insufficient(balance, needed, available);
    // A replay of an id the library made up is a resent command: to the caller, one charge.
    return { ok: true, charged, balance, available, sources: sourcesFrom(reply.sources), replayed: own && code === Code.REPLAYED };
  }

  /**
   * Adds a grant of credits beside the cycle's allowance (a top-up pack, a promotional grant),
   * live on [effectiveAt, expiresAt) and spent in the spend order (docs/grants.md). At most
   * createTollgate's `grants.max` live or pending grants: used ones are archived to make
   * room, else `grant_limit_reached`. The same operation id with the same terms answers the
   * first grant again; with other terms it is an InvalidInputError.
   *
   * @example
   * ```ts
   * const pack = await tollgate.credits.grant("acct_42", { amount: 10_000, kind: "paid", operationId: `order_${orderId}` });
   * if (pack.ok) console.log(pack.grantId); // "g1"
   * ```
   */
  async grant(subject: string, request: GrantRequest): Promise<GrantOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const args = grantArgs(request, this.ctx.localNow());
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const params = {
      amount: args.amount,
      kind: args.kind,
      priority: args.priority,
      effectiveAt: request.effectiveAt === undefined ? -1 : args.effectiveAt,
      expiresAt: args.expiresAt ?? 0,
      reason: args.reason,
      operationId: args.operationId,
    };
    const reply = await this.ctx.runner.move(grant, redisKeys, params, undefined, args.operationId);
    switch (reply.code) {
      case Code.OK:
      case Code.REPLAYED:
        // An account with events (it wrote grant.added) is swept for the grant's expiry notice.
        if (reply.code === Code.OK && reply.events + reply.eventsDropped > 0 && args.expiresAt !== null) {
          await markCycleEnd(this.ctx, redisKeys.subject, args.expiresAt - Number(this.ctx.runner.settings.expiringNoticeMs));
        }
        return { ok: true, grantId: reply.grantId, replayed: reply.code === Code.REPLAYED };
      case Code.GRANT_LIMIT:
        return { ok: false, reason: 'grant_limit_reached' };
      case Code.BAD_GRANT:
        throw expiryNotAfterStart();
      default:
        throw new Error(`grant returned an unknown code ${String(reply.code)}`);
    }
  }

  /**
   * Voids a grant: what it has left is voided now; what it holds stays held and is voided when
   * refunded. A grant that has ended voids nothing. Unknown grant id: GrantNotFoundError; a
   * cycle's allowance (`cycle:<n>`) cannot be voided (InvalidInputError).
   */
  async voidGrant(subject: string, grantId: string, options: VoidGrantOptions): Promise<VoidOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const { grant: number, operationId } = voidArgs(grantId, options);
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const reply = await this.ctx.runner.move(voidGrant, redisKeys, { grant: number, operationId }, undefined, operationId);
    if (reply.code === Code.NO_GRANT) throw new GrantNotFoundError(grantId);
    return { ok: true, voided: reply.voided, replayed: reply.code === Code.REPLAYED };
  }

  /**
   * The subject's sources of credits as they stand now: the current cycle's allowance
   * (`cycle:<n>`), the live grants in spend order, then the pending ones; with `ended: true`
   * the ended grants (newest ended first) and the ended cycles (newest first) too.
   */
  async grants(subject: string, options: ListGrantsOptions = {}): Promise<Grant[]> {
    const redisKeys = this.ctx.redisKeys(subject);
    const reply = await this.ctx.runner.run(listGrants, redisKeys, { ended: options?.ended === true ? 1 : 0 });
    return list(reply.grants).map(grantFrom);
  }

  /**
   * A support correction: +n adds a grant of kind "adjustment" (priority 50, no expiry,
   * effective now; InvalidInputError when the subject has `grants.max` live grants and none
   * can be archived); -n takes n credits in spend order, refused whole with `insufficient`
   * when less is available.
   */
  async adjust(subject: string, request: AdjustRequest): Promise<AdjustOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const { amount, reason, operationId } = adjustArgs(request);
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const reply = await this.ctx.runner.move(adjust, redisKeys, { amount, reason, operationId }, undefined, operationId);
    switch (reply.code) {
      case Code.OK:
      case Code.REPLAYED:
        return {
          ok: true,
          amount,
          grantId: reply.grantId === '' ? null : reply.grantId,
          sources: reply.sources,
          available: reply.available,
          replayed: reply.code === Code.REPLAYED,
        };
      case Code.INSUFFICIENT:
        return { ok: false, reason: 'insufficient', available: reply.available, needed: reply.needed };
      case Code.GRANT_LIMIT:
        throw grantLimitReached(amount, this.ctx.grantsMax);
      default:
        throw new Error(`adjust returned an unknown code ${String(reply.code)}`);
    }
  }

  /**
   * Gives back all or part of an earlier charge, named by the operation id it was charged
   * with, to the sources that paid it (last drawn first; a source that has ended records it
   * as refundedAfterEnd and raises no balance). At most what the charge took over all its
   * refunds; refundable while the charge's operation id is kept (operationTtlMs).
   *
   * @example
   * ```ts
   * const back = await tollgate.credits.refund("acct_42", { charge: requestId, reason: "failed render", operationId: `refund_${requestId}` });
   * if (!back.ok) console.log(back.reason); // "unknown_charge" | "exceeds_charge"
   * ```
   */
  async refund(subject: string, request: RefundRequest): Promise<RefundOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const { charge: chargeId, amount, operationId } = refundArgs(request);
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const reply = await this.ctx.runner.move(refund, redisKeys, { charge: chargeId, amount, operationId }, undefined, operationId);
    switch (reply.code) {
      case Code.OK:
      case Code.REPLAYED:
        return { ok: true, refunded: reply.refunded, sources: reply.sources, replayed: reply.code === Code.REPLAYED };
      case Code.UNKNOWN_CHARGE:
        return { ok: false, reason: 'unknown_charge' };
      case Code.EXCEEDS_CHARGE:
        return { ok: false, reason: 'exceeds_charge' };
      default:
        throw new Error(`refund returned an unknown code ${String(reply.code)}`);
    }
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
