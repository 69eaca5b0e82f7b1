/**
 * Charges (SPEC §5), the journal reconciliation and the per-day history. A charge takes
 * `required` credits, or none, plus as many `optional` ones as the balance allows, in one
 * atomic script; an operation id makes a retried charge apply once.
 * Scripts: lua/charge.lua, lua/reconcile.lua, lua/creditHistory.lua.
 */
import type { Context } from "./context.ts";
import { chargeArgs, historyDaysArg, insufficient, newOperationId, type ChargeOutcome, type ChargeRequest, type DayUsage, type Reconciliation } from "./rules/credits.ts";
import { charge, creditHistory, reconcile } from "./scripts/bundle.generated.ts";
import { Code } from "./scripts/codes.ts";

export type { ChargeOutcome, ChargeRequest, DayUsage, Insufficient, Reconciliation } from "./rules/credits.ts";

const DAY_MS = 86_400_000;

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
   * if (!charge.ok) return reply(insufficientReply(charge.balance, charge.needed, requestId)); // 402
   * console.log(charge.balance);
   * ```
   */
  async charge(subject: string, request: ChargeRequest): Promise<ChargeOutcome> {
    const keys = this.ctx.keys(subject);
    const { required, optional, operationId: given } = chargeArgs(request);
    if (!this.ctx.eviction.safe) await this.ctx.eviction.ready();
    const own = given !== "";
    // A durable charge always has an operation id, so that an unconfirmed one can be retried.
    const operationId = own || !this.ctx.runner.durable ? given : newOperationId();
    const reply = await this.ctx.runner.move(
      charge,
      keys,
      {
        operation: keys.operation(operationId),
        required,
        optional,
        operationId,
        resendId: operationId !== "" ? "" : this.ctx.resendId(),
      },
      undefined,
      operationId,
    );
    const [code, charged, balance, needed] = reply as [number, number, number, number];
    if (code === Code.INSUFFICIENT) return insufficient(balance, needed);
    // A replay of an id the library made up is a resent command: to the caller, one charge.
    return { ok: true, charged, balance, replayed: own && code === Code.REPLAYED };
  }

  /** Recomputes the current cycle from the journal and compares it with the account. */
  async reconcile(subject: string): Promise<Reconciliation> {
    const keys = this.ctx.keys(subject);
    const reply = (await this.ctx.runner.run(reconcile, keys, {})) as number[];
    const [, complete, cycle, jb, js, jh, b, s, h, entries] = reply as [number, number, number, number, number, number, number, number, number, number];
    return {
      complete: complete === 1,
      cycle,
      journal: { balance: jb, spent: js, held: jh },
      stored: { balance: b, spent: s, held: h },
      entries,
      matches: complete === 1 && jb === b && js === s && jh === h,
    };
  }

  /**
   * Credits spent and refunded per UTC day over the last `days` days (today included), oldest
   * first; days without a movement are left out. A charge counts when made, a hold's credits
   * when settled. Kept for the `history.days` of createTollgate (default 92); `days`
   * defaults to 30, or to every kept day when fewer are kept.
   */
  async history(subject: string, options: { days?: number } = {}): Promise<DayUsage[]> {
    const keys = this.ctx.keys(subject);
    const days = historyDaysArg(options, this.ctx.historyDays);
    const reply = (await this.ctx.runner.run(creditHistory, keys, { days })) as number[];
    const out: DayUsage[] = [];
    for (let i = 1; i + 2 < reply.length; i += 3) {
      out.push({ day: Number(reply[i]) * DAY_MS, spent: Number(reply[i + 1]), refunded: Number(reply[i + 2]) });
    }
    return out;
  }
}
