/**
 * The whole quota state of an account on one surface (the usage body), read without
 * counting a request (usage is free). Script: usage (also reached with a key
 * through keys.verify(key, { usage: true }), one round trip).
 */
import type { Context } from "./context.ts";
import { creditsFrom, cycleFrom, type AccountAttributes, type Credits, type Cycle } from "./records.ts";
import { usage as usageScript } from "./scripts/bundle.generated.ts";
import { mostRestrictive, windowsFromReply, type RateLimitState } from "./windows.ts";

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

/** Decodes usage.lua's reply. */
export function usageFrom(reply: unknown[], surface: string): Usage {
  const { states: windows, retries, next } = windowsFromReply(reply);
  const a = JSON.parse(String(reply[next])) as AccountAttributes;
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
  const keys = ctx.keys(subject);
  const surface = ctx.accountSurface(options.surface ?? "api");
  const reply = await ctx.runner.run(usageScript, keys, {
    surface,
    stagger: ctx.staggerOf(keys.subject),
    keyId: "",
    keyDigest: "",
  });
  return usageFrom(reply, surface);
}
