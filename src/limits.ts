/**
 * Per-minute request budgets (SPEC §4): a fixed 60 s window per account and surface. One
 * round trip admits the request and, when asked, pre-checks the credit balance of a charged
 * endpoint. A denied request is a value and is not counted. Script: lua/admit.lua.
 */
import type { Context } from "./context.ts";
import { AccountNotFoundError } from "./errors.ts";
import { Code } from "./scripts/codes.ts";
import { count, oneOf } from "./validate.ts";

export const SURFACES = ["api", "web"] as const;
export type Surface = (typeof SURFACES)[number];

export interface RateLimitState {
  /** The plan's budget per window on this surface. */
  limit: number;
  /** Requests left in this window after this one; never negative. */
  remaining: number;
  /** Ms until the window resets. */
  resetMs: number;
}

export type Admission =
  | {
      allowed: true;
      rateLimit: RateLimitState;
      /** Present when a credit pre-check was asked: sufficient, or the counts for a 402. */
      credits?: { sufficient: boolean; balance: number; needed: number };
    }
  | { allowed: false; reason: "rate_limited"; rateLimit: RateLimitState; retryAfterMs: number };

export interface AdmitOptions {
  surface?: Surface;
  /** Pre-check that the balance holds at least this many credits (0: no pre-check). */
  credits?: number;
}

export class Limits {
  constructor(private readonly ctx: Context) {}

  async admit(accountId: string, options: AdmitOptions = {}): Promise<Admission> {
    const keys = this.ctx.keys(accountId);
    const surface = oneOf("Surface", options.surface ?? "api", SURFACES);
    const credits = count("Credits to pre-check", options.credits ?? 0);
    const reply = (await this.ctx.runner.run(
      "admit",
      { account: keys.account },
      { nowMs: this.ctx.now(), surface, windowMs: this.ctx.windowMs, credits, counterPrefix: keys.counters(surface) },
    )) as number[];
    const [code, limit, remaining, resetMs, balance, needed] = reply.map(Number) as [number, number, number, number, number, number];
    if (code === Code.NO_ACCOUNT) throw new AccountNotFoundError(keys.id);
    const rateLimit = { limit, remaining, resetMs };
    if (code === Code.RATE_LIMITED) {
      return { allowed: false, reason: "rate_limited", rateLimit, retryAfterMs: resetMs };
    }
    if (credits === 0) return { allowed: true, rateLimit };
    return { allowed: true, rateLimit, credits: { sufficient: code === Code.OK, balance, needed } };
  }
}
