/**
 * The whole quota state of an account on one surface (SPEC §9 usage body), read without
 * counting a request (SPEC §4: usage is free). Script: lua/usage.lua (also reached with a key
 * through keys.verify(key, { usage: true }), one round trip).
 */
import type { Context } from "./context.ts";
import { accountAttributes, creditsFrom, cycleFrom, type Credits, type Cycle } from "./records.ts";
import { usage as usageScript } from "./scripts/bundle.generated.ts";
import { Code } from "./scripts/codes.ts";
import { afterDue } from "./sweep.ts";
import { mostRestrictive, type RateLimitState, type WindowsForm } from "./windows.ts";

/** An account's whole quota state on one surface (tollgate.usage, keys.verify with `usage: true`). */
export interface Usage {
  /** The account's plan. */
  plan: string;
  /** Credits of the current cycle. */
  credits: Credits;
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

/** The usage usage.lua's reply stands for. */
export function usageFrom(reply: { windows: WindowsForm; state: unknown }, surface: string): Usage {
  const { states: windows, retries } = reply.windows;
  const a = accountAttributes(reply.state);
  const { index } = mostRestrictive(windows, retries);
  const surfaces = String(a.holdsSurfaces ?? "");
  return {
    plan: String(a.plan),
    credits: creditsFrom(a),
    cycle: cycleFrom(a),
    rateLimit: { ...windows[index]!, surface },
    windows,
    holds: { active: Number(a.active ?? 0), cap: Number(a.holdsCap ?? 0), maxItems: Number(a.holdsMaxItems ?? 0), surfaces: surfaces === "" ? [] : surfaces.split(",") },
    now: Number(a.now),
  };
}

export async function readUsage(ctx: Context, subject: string, options: { surface?: string } = {}): Promise<Usage> {
  const redisKeys = ctx.redisKeys(subject);
  const surface = ctx.accountSurface(options.surface ?? "api");
  const params = { surface, stagger: ctx.staggerOf(redisKeys.subject), keyId: "", keyDigest: "" };
  const reply = await afterDue(ctx, redisKeys, () => ctx.runner.run(usageScript, redisKeys, params));
  // Without a key id, nothing is refused.
  if (reply.code === Code.KEY_REFUSED) throw new Error(`usage refused no key: ${reply.reason}`);
  return usageFrom(reply, surface);
}
