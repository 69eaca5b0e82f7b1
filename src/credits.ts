/**
 * Charges (SPEC §5) and the journal reconciliation. A charge takes `required` credits, or
 * none, plus as many `optional` ones as the balance allows, in one atomic script; an
 * operation id makes a retried charge apply once. Scripts: lua/charge.lua, lua/reconcile.lua.
 */
import type { Context } from "./context.ts";
import { AccountNotFoundError, InvalidInputError } from "./errors.ts";
import { Code } from "./scripts/codes.ts";
import { count, printableKey } from "./validate.ts";

export interface ChargeRequest {
  required: number;
  optional?: number;
  /**
   * Makes a retried charge (e.g. after a timeout) apply once: 1-255 printable ASCII, kept 24 h.
   * Without one the charge gets a random id, so a client's own resend is still applied once.
   */
  operationId?: string;
}

export type ChargeOutcome =
  | { ok: true; charged: number; balance: number; replayed: boolean }
  | { ok: false; reason: "insufficient"; remaining: number; needed: number };

export interface Reconciliation {
  /** False when the cycle's opening entry was trimmed from the journal or it is off. */
  complete: boolean;
  cycle: number;
  /** What the journal adds up to, and what the account holds. */
  journal: { balance: number; spent: number; held: number };
  stored: { balance: number; spent: number; held: number };
  entries: number;
  /** complete and both agree. */
  matches: boolean;
}

export class Credits {
  constructor(private readonly ctx: Context) {}

  async charge(accountId: string, request: ChargeRequest): Promise<ChargeOutcome> {
    const keys = this.ctx.keys(accountId);
    const required = count("required", request.required);
    const optional = count("optional", request.optional ?? 0);
    if (required + optional === 0) throw new InvalidInputError("A charge must ask for at least 1 credit");
    const own = request.operationId !== undefined;
    const operationId = own ? printableKey("Operation id", request.operationId) : this.ctx.newId();
    const opTtlMs = own ? this.ctx.operationTtlMs : this.ctx.resendWindowMs;
    const reply = (await this.ctx.runner.run(
      "charge",
      { account: keys.account, cycles: keys.cycles, journal: keys.journal, operation: keys.operation(operationId) },
      { nowMs: this.ctx.now(), required, optional, operationId, opTtlMs, ...this.ctx.journal },
    )).map(Number);
    const [code, charged, balance, needed] = reply as [number, number, number, number];
    if (code === Code.NO_ACCOUNT) throw new AccountNotFoundError(keys.id);
    if (code === Code.INSUFFICIENT) return { ok: false, reason: "insufficient", remaining: balance, needed };
    // A replay of an id the library made up is a resent command: to the caller, one charge.
    return { ok: true, charged, balance, replayed: own && code === Code.REPLAYED };
  }

  /** Recomputes the current cycle from the journal and compares it with the account. */
  async reconcile(accountId: string): Promise<Reconciliation> {
    const keys = this.ctx.keys(accountId);
    const reply = (await this.ctx.runner.run(
      "reconcile",
      { account: keys.account, cycles: keys.cycles, journal: keys.journal },
      { nowMs: this.ctx.now(), ...this.ctx.journal },
    )).map(Number);
    if (reply[0] === Code.NO_ACCOUNT) throw new AccountNotFoundError(keys.id);
    const [, complete, cycle, jb, js, jh, b, s, h, entries] = reply as number[] as [number, number, number, number, number, number, number, number, number, number];
    const journal = { balance: jb, spent: js, held: jh };
    const stored = { balance: b, spent: s, held: h };
    return {
      complete: complete === 1,
      cycle,
      journal,
      stored,
      entries,
      matches: complete === 1 && jb === b && js === s && jh === h,
    };
  }
}
