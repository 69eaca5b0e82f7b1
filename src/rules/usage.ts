// What tollgate.usage answers: an account's whole quota state on one surface.
import type { AccountCredits, Cycle } from './records.ts';
import type { RateLimitState } from './windows.ts';

/** An account's whole quota state on one surface (tollgate.usage, keys.verify with `usage: true`). */
export interface Usage {
  /** The account's plan. */
  plan: string;
  /** Credits of the current cycle. */
  credits: AccountCredits;
  /** The current cycle. */
  cycle: Cycle;
  /** The most restrictive window of the surface (what the headers show). */
  rateLimit: RateLimitState & { surface: string };
  /** Every window of the surface, in the plan's order. */
  windows: RateLimitState[];
  /** Holds: `active` open now, at most `cap`, of at most `maxItems` items, on `surfaces`. */
  holds: { active: number; cap: number; maxItems: number; surfaces: string[] };
  /** The time the state was read at (the injected clock or Redis TIME). */
  now: number;
}
