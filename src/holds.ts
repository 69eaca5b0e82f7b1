/**
 * Holds: credits reserved upfront in one atomic step and settled item by item,
 * finished or cancelled with refunds to the cycle that paid. An items hold reserves
 * items x (required + optional) and settles each item as delivered (its required credits and
 * what it used of its optional ones are spent) or failed with a label (nothing spent). A
 * budget hold reserves an amount drawn item by item. Outcomes a client can cause are values;
 * only missing accounts or holds, bad input and store failures throw.
 * Scripts: openHold, settleHold, renewHold, endHold, readHold,
 * listHolds; the sweep lives in src/sweep.ts.
 */
import type { Context } from './context.ts';
import { HoldNotFoundError, InvalidInputError } from './errors.ts';
import { claimOf, decodeStoredOutcome } from './idempotency.ts';
import { insufficient } from './rules/credits.ts';
import { holdFrom, type Hold, type HoldKind } from './records.ts';
import type { SubjectKeys } from './redisKeys.ts';
import {
  budgetArgs,
  endOutcome,
  holdIdArg,
  openArgs,
  settleArgs,
  settled,
  settleRefused,
  spendArgs,
  surfaceNotAllowed,
  type EndOutcome,
  type HoldSize,
  type IdempotencyInput,
  type OpenBudgetRequest,
  type OpenHoldRequest,
  type OpenOutcome,
  type RenewOutcome,
  type Settlement,
  type SettleOutcome,
  type Spend,
} from './rules/holds.ts';
import { count, shortId } from './rules/validate.ts';
import { surfaceName } from './rules/windows.ts';
import { endHold, listHolds, openHold, readHold, renewHold, settleHold } from './scripts/bundle.generated.ts';
import { Code } from './scripts/codes.ts';
import type { Sweeper } from './sweep.ts';

export type {
  EndOutcome,
  IdempotencyInput,
  OpenBudgetRequest,
  OpenHoldRequest,
  OpenOutcome,
  RenewOutcome,
  Settled,
  Settlement,
  SettleOutcome,
  SettleRefusal,
  Spend,
  SurfaceNotAllowed,
} from './rules/holds.ts';

/**
 * Holds (`tollgate.holds`): credits reserved upfront for a bulk job (items, settled item by item)
 * or a budget (spent as it goes), ended with refunds to the cycle that paid.
 */
export class Holds {
  /** @internal Made by createTollgate. */
  constructor(
    private readonly ctx: Context,
    private readonly sweeper: Sweeper,
  ) {}

  /**
   * Reserves items x (required + optional) credits, in one script whatever `items` is, within
   * the plan's cap of open holds and maxItems. Nothing is reserved when the outcome is not ok.
   *
   * @example
   * ```ts
   * // A batch of 500 image renders, 1 credit each, plus 1 more per render that is upscaled:
   * const opened = await tollgate.holds.open("acct_42", {
   *   items: 500,
   *   perItem: { required: 1, optional: 1 },
   *   idempotency: { key: idempotencyKey, body: requestBody },
   * });
   * if (!opened.ok) return reply(opened.reason); // e.g. "insufficient": 402
   * const batchId = opened.hold.id;
   * ```
   */
  async open(subject: string, request: OpenHoldRequest): Promise<OpenOutcome> {
    return this.openAny(subject, 'items', request?.surface ?? 'api', openArgs(request), request);
  }

  /** Reserves a budget of `amount` credits, drawn item by item with spend. */
  async openBudget(subject: string, request: OpenBudgetRequest): Promise<OpenOutcome> {
    return this.openAny(subject, 'budget', request?.surface ?? 'api', budgetArgs(request), request);
  }

  /**
   * Renews an open hold's lease from now without settling anything, for work that runs longer
   * than a lease (an LLM completion, a long render): by the hold's own leaseMs, else
   * createTollgate's. A hold that has ended, or whose lease ran out before the renewal (it
   * ends then, with its refunds), answers `{ ok: false, reason: "ended" }`.
   *
   * @example
   * ```ts
   * const timer = setInterval(() => void tollgate.holds.renew("acct_42", holdId), 60_000);
   * try { await runTheModel(); } finally { clearInterval(timer); }
   * ```
   */
  async renew(subject: string, holdIdArg: string): Promise<RenewOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const holdId = shortId('Hold id', holdIdArg);
    const reply = await this.ctx.runner.run(renewHold, redisKeys, { hold: redisKeys.hold(holdId) }, holdId);
    // The sweep index needs no word: an entry earlier than a lease is safe, and the sweep moves it.
    if (reply.code === Code.OK) return { ok: true, leaseUntil: reply.leaseUntil };
    if (reply.code === Code.HOLD_ENDED) return { ok: false, reason: 'ended' };
    throw new Error(`renewHold returned an unknown code ${String(reply.code)}`);
  }

  private async openAny(
    subject: string,
    kind: HoldKind,
    surfaceArg: string,
    { leaseMs: holdLeaseMs, ...size }: HoldSize,
    request: { idempotency?: IdempotencyInput; holdId?: string },
  ): Promise<OpenOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const surface = surfaceName('Surface', surfaceArg);
    const { holdId, own: ownHoldId } = holdIdArg(request.holdId);
    const claim = claimOf(request.idempotency);
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const params = {
      hold: redisKeys.hold(holdId),
      idempotency: redisKeys.idempotency(claim?.key ?? ''),
      holdId,
      kind,
      surface,
      ...size,
      idempotencyKey: claim?.key ?? '',
      fingerprint: claim?.fingerprint ?? '',
      idempotencyToken: claim?.token ?? '',
      holdLeaseMs,
    };
    // Lapsed holds, and ended ones past their bounds, are tidied first (HOLDS_DUE).
    const open = () => this.sweeper.afterDue(redisKeys, () => this.ctx.runner.move(openHold, redisKeys, params, holdId, holdId));
    // The sweep index learns of the subject before the hold exists, so a crash between the
    // two can never leave a hold that no sweep will find: sent in that order on one
    // connection, or, when a durable open goes on a connection of its own, one after the other.
    const leaseUntil = this.ctx.localNow() + (holdLeaseMs || this.ctx.leaseMs);
    const reply = this.ctx.runner.durable
      ? (await this.sweeper.mark(redisKeys.subject, leaseUntil), await open())
      : (await Promise.all([this.sweeper.mark(redisKeys.subject, leaseUntil), open()]))[1];
    switch (reply.code) {
      case Code.OK:
        return { ok: true, hold: holdFrom(reply.hold), replayed: false };
      case Code.REPLAYED: {
        const stored = decodeStoredOutcome(reply.storedCode, reply.outcome);
        // The same hold id answered by its hold: a resent command unless the caller chose the id.
        const resent = !claim && !ownHoldId;
        return stored.kind === 'hold'
          ? { ok: true, hold: stored.hold, replayed: !resent }
          : { ok: false, reason: 'hold_limit_reached', active: stored.active, cap: stored.cap, replayed: true };
      }
      case Code.HOLD_LIMIT:
        return { ok: false, reason: 'hold_limit_reached', active: reply.refusal.active, cap: reply.refusal.cap, replayed: false };
      case Code.INSUFFICIENT:
        return insufficient(reply.refusal.balance, reply.refusal.needed, reply.refusal.available);
      case Code.SURFACE_NOT_ALLOWED: {
        const allowed = reply.refusal.surfaces;
        return surfaceNotAllowed(surface, allowed === '' ? [] : allowed.split(','));
      }
      case Code.TOO_MANY_ITEMS:
        return { ok: false, reason: 'too_many_items', max: reply.refusal.max };
      case Code.IDEMPOTENCY_REUSED:
        return { ok: false, reason: 'idempotency_key_reused' };
      case Code.IDEMPOTENCY_IN_USE:
        return { ok: false, reason: 'idempotency_key_in_use' };
      case Code.HOLD_EXISTS:
        throw new InvalidInputError(`Hold id "${holdId}" is already taken by a hold with other terms`);
      case Code.HOLD_DROPPED:
        throw new InvalidInputError(`Hold id "${holdId}" was taken by a hold that has ended and is no longer kept`);
      default:
        throw new Error(`openHold returned an unknown code ${String(reply.code)}`);
    }
  }

  /**
   * Settles one item of an items hold: delivered (its required credits and optionalSpent of
   * its optional ones are spent) or failed with a label. Renews the lease; the last item ends
   * the hold with its refunds. An item settles once: a repeat is `replayed` and changes nothing.
   *
   * @example
   * ```ts
   * await tollgate.holds.settle("acct_42", batchId, { itemId: "img-001", optionalSpent: 1 }); // rendered and upscaled
   * await tollgate.holds.settle("acct_42", batchId, { itemId: "img-002", failed: "unsafe_prompt" }); // refunded
   * await tollgate.holds.finish("acct_42", batchId); // refunds what was not used
   * ```
   */
  async settle(subject: string, holdId: string, settlement: Settlement): Promise<SettleOutcome> {
    return this.settleAny(subject, holdId, 'items', settleArgs(settlement));
  }

  /** Takes `amount` credits from a budget hold; more than is left is refused and takes nothing. */
  async spend(subject: string, holdId: string, spend: Spend): Promise<SettleOutcome> {
    return this.settleAny(subject, holdId, 'budget', spendArgs(spend));
  }

  private async settleAny(
    subject: string,
    holdIdArg: string,
    kind: HoldKind,
    what: { itemId: string; failed: string; optionalSpent: number; amount: number },
  ): Promise<SettleOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const holdId = shortId('Hold id', holdIdArg);
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const reply = await this.ctx.runner.move(settleHold, redisKeys, { hold: redisKeys.hold(holdId), kind, ...what }, holdId, what.itemId);
    const { code } = reply;
    // Every code that reaches here comes with the hold (absent only for a hold that is not there).
    if (reply.hold === undefined) throw new HoldNotFoundError(holdId);
    const hold = holdFrom(reply.hold);
    switch (code) {
      case Code.OK:
        return settled(hold, false);
      case Code.REPLAYED:
        return settled(hold, true);
      case Code.LEASE_EXPIRED:
        return settleRefused('lease_expired', hold);
      case Code.BUDGET_EXHAUSTED:
        return settleRefused('budget_exhausted', hold);
      case Code.TOO_MANY_LABELS:
        return settleRefused('too_many_labels', hold);
      case Code.HOLD_ENDED:
        return settleRefused('hold_ended', hold);
      default:
        throw new Error(`settleHold returned an unknown code ${String(code)}`);
    }
  }

  /** Ends a hold now as completed, refunding whatever it did not use. */
  finish(subject: string, holdId: string): Promise<EndOutcome> {
    return this.end(subject, holdId, 'completed', 'finished');
  }

  /** Cancels a hold: refunds everything it still holds; a second cancel refunds nothing. */
  cancel(subject: string, holdId: string): Promise<EndOutcome> {
    return this.end(subject, holdId, 'canceled', 'canceled');
  }

  private async end(subject: string, holdIdArg: string, status: 'completed' | 'canceled', reason: 'finished' | 'canceled'): Promise<EndOutcome> {
    const redisKeys = this.ctx.redisKeys(subject);
    const holdId = shortId('Hold id', holdIdArg);
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const reply = await this.ctx.runner.move(endHold, redisKeys, { hold: redisKeys.hold(holdId), status, reason }, holdId, holdId);
    return endOutcome(reply.code === Code.OK, holdFrom(reply.hold));
  }

  /** One hold of the subject (another subject's hold id is not found). Spends nothing. */
  async get(subject: string, holdIdArg: string): Promise<Hold> {
    const redisKeys = this.ctx.redisKeys(subject);
    const holdId = shortId('Hold id', holdIdArg);
    const [hold] = await this.read(redisKeys, [holdId]);
    if (!hold) throw new HoldNotFoundError(holdId);
    return hold;
  }

  /**
   * The subject's holds, newest first, a page at a time: `total` holds kept, `active` of them
   * open. Ended holds are kept for createTollgate's `endedHolds` (7 days, 1,000 by default).
   */
  async list(subject: string, page: { offset?: number; limit?: number } = {}): Promise<{ total: number; active: number; holds: Hold[] }> {
    const redisKeys = this.ctx.redisKeys(subject);
    const params = { offset: count('offset', page.offset ?? 0), count: count('limit', page.limit ?? 50, 0, 1000) };
    const reply = await this.sweeper.afterDue(redisKeys, () => this.ctx.runner.run(listHolds, redisKeys, params));
    const holds = reply.holdIds.length === 0 ? [] : (await this.read(redisKeys, reply.holdIds)).filter((hold): hold is Hold => hold !== undefined);
    return { total: reply.total, active: reply.active, holds };
  }

  /** Holds by id, as they stand (undefined for one not found), lapsed ones tidied first. */
  private async read(redisKeys: SubjectKeys, ids: readonly string[]): Promise<Array<Hold | undefined>> {
    const holds = ids.map((id) => redisKeys.hold(id));
    const reply = await this.sweeper.afterDue(redisKeys, () => this.ctx.runner.run(readHold, redisKeys, { holds, asStored: 0 }));
    const byId = new Map(reply.holds.map((hold) => [hold.id, holdFrom(hold)]));
    return ids.map((id) => byId.get(id));
  }

  /**
   * Ends every lapsed hold of the deployment, subject by subject, so no credit or cap place
   * stays locked. Safe to run from many servers at once.
   */
  sweep(options: { batch?: number; maxRounds?: number } = {}): Promise<{ subjects: number; ended: number }> {
    return this.sweeper.sweep(options);
  }

  /** Ends one subject's lapsed holds now. */
  sweepSubject(subject: string): Promise<{ ended: number; nextLeaseAt: number | null }> {
    return this.sweeper.sweepSubject(subject);
  }
}

export type { SubjectKeys };
